def answer_consent(method, headers, sender):
    """Answers the consent request a sender makes before its first delivery to this URL: an OPTIONS naming the
    sender in WebHook-Request-Origin, allowed here for `sender` alone. Returns (status, headers), or None for any
    other request, which goes on to the rest of your handler."""
    origin = next((v for k, v in headers.items() if k.lower() == "webhook-request-origin"), None)
    if method != "OPTIONS" or origin is None:
        return None
    if origin.lower() != sender.lower():
        return 403, {}
    return 200, {"Allow": "POST", "WebHook-Allowed-Origin": origin}
