import base64
import hashlib
import hmac
import json
import time


class WebhookVerificationError(Exception):
    """The delivery is refused: answer 400."""


def verify_webhook(payload: bytes, headers, secret: str, brand: str = "Hooklane", tolerance: int = 300) -> dict:
    """Returns the event of a genuine delivery, in either scheme.

    `payload` is the raw body; `headers` any mapping of header names (in any case) to values.
    """
    headers = {name.lower(): value for name, value in headers.items()}
    if "webhook-signature" in headers:
        # Standard Webhooks: "<id>.<timestamp>.<body>", keyed by the base64 after whsec_.
        timestamp = headers.get("webhook-timestamp", "")
        signed = f"{headers.get('webhook-id', '')}.{timestamp}.".encode() + payload
        key = base64.b64decode(secret.removeprefix("whsec_"))
        expected = base64.b64encode(hmac.digest(key, signed, hashlib.sha256)).decode()
        candidates = [value[3:] for value in headers["webhook-signature"].split(" ") if value.startswith("v1,")]
    else:
        # hooklane-v1 (as Stripe): "t=<timestamp>,v1=<hex>[,v1=<hex>]", "<timestamp>.<body>" keyed by the whole secret.
        elements = [element.strip() for element in headers.get(f"{brand}-signature".lower(), "").split(",")]
        timestamps = [element[2:] for element in elements if element.startswith("t=")]
        timestamp = timestamps[0] if len(timestamps) == 1 else ""
        expected = hmac.digest(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hex()
        candidates = [element[3:] for element in elements if element.startswith("v1=")]

    if not (timestamp.isascii() and timestamp.isdigit()):
        raise WebhookVerificationError("missing or malformed signature headers")
    if not any(hmac.compare_digest(candidate.encode(), expected.encode()) for candidate in candidates):
        raise WebhookVerificationError("no signature matches the body and the secret")
    if abs(int(time.time()) - int(timestamp)) > tolerance:
        raise WebhookVerificationError("the signature's timestamp is too far from now")
    return json.loads(payload)
