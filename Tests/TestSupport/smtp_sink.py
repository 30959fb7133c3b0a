"""A real local SMTP server for the tests (aiosmtpd): stores each message it accepts as a file in DIR.

Usage: python3 smtp_sink.py PORT DIR
A recipient whose local part is `reject` is refused with 550, as a server refuses an unknown mailbox.
"""
import asyncio
import os
import sys
import uuid

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, directory):
        self.directory = directory

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.split("@")[0].lower() == "reject":
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        name = os.path.join(self.directory, f"{uuid.uuid4()}.eml")
        with open(name + ".tmp", "wb") as file:
            file.write(f"X-Envelope-From: {envelope.mail_from}\r\n".encode())
            file.write(f"X-Envelope-To: {','.join(envelope.rcpt_tos)}\r\n".encode())
            file.write(envelope.original_content or envelope.content)
        os.rename(name + ".tmp", name)
        return "250 Message accepted for delivery"


if __name__ == "__main__":
    port, directory = int(sys.argv[1]), sys.argv[2]
    controller = Controller(Sink(directory), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        asyncio.get_event_loop().run_forever()
    finally:
        controller.stop()
