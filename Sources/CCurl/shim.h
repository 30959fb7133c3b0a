#include <curl/curl.h>
/* The client's thread waits on libcurl's sockets with epoll and is woken through an eventfd (SocketEvents). */
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* curl_easy_setopt and friends are variadic, which Swift cannot call: typed wrappers. */
static inline CURLcode carbscan_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode carbscan_curl_easy_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode carbscan_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode carbscan_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLcode carbscan_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature. */
static inline CURLcode carbscan_curl_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}
/* CURL_GLOBAL_DEFAULT is a macro expression Swift does not import. */
static inline CURLcode carbscan_curl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}
/* SMTP: the recipients list and the MIME message are pointers too; a typed wrapper keeps call sites readable. */
static inline CURLcode carbscan_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *list) {
    return curl_easy_setopt(handle, option, list);
}
/* The multi socket API: libcurl tells the owner which sockets to watch and when to call it back. */
static inline CURLMcode carbscan_curl_multi_setopt_socket_callback(CURLM *multi, curl_socket_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, callback);
}
static inline CURLMcode carbscan_curl_multi_setopt_timer_callback(CURLM *multi, curl_multi_timer_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, callback);
}
static inline CURLMcode carbscan_curl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}
