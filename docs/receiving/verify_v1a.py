import base64
import json
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class WebhookVerificationError(Exception):
    """The delivery is refused: answer 400."""


def verify_v1a(payload: bytes, headers, jwks: dict, tolerance: int = 300) -> dict:
    """Returns the event of a delivery whose v1a (ed25519) signature verifies with the key set's key it names.

    `jwks` is the parsed key set from the sender's URL, cached as its Cache-Control allows; no secret is needed.
    """
    headers = {name.lower(): value for name, value in headers.items()}
    kid, timestamp = headers.get("webhook-key-id"), headers.get("webhook-timestamp", "")
    keys = [key for key in jwks.get("keys", []) if key.get("kid") == kid and key.get("crv") == "Ed25519"]
    if not keys or not (timestamp.isascii() and timestamp.isdigit()):
        raise WebhookVerificationError("no key of the set signed this, or the signature headers are malformed")
    x = keys[0]["x"]
    key = Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(x + "=" * (-len(x) % 4)))
    signed = f"{headers.get('webhook-id', '')}.{timestamp}.".encode() + payload
    for value in headers.get("webhook-signature", "").split(" "):
        if not value.startswith("v1a,"):
            continue
        try:
            key.verify(base64.b64decode(value[4:]), signed)
        except (InvalidSignature, ValueError):
            continue
        if abs(int(time.time()) - int(timestamp)) > tolerance:
            raise WebhookVerificationError("the signature's timestamp is too far from now")
        return json.loads(payload)
    raise WebhookVerificationError("no v1a signature matches the body")
