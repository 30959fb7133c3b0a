/// What a provider's webhook is answered (Stripe and Apple retry anything but a 2xx): received, ignored when the
/// event is not one this server acts on, and the job that acts on it.
struct WebhookReceived: Encodable {
    var received: Bool
    var ignored: Bool
    @Nullable var jobId: String?
}
