import { html } from "hono/html";

/**
 * The "verify a signature" guide's snippets, one per language: each checks a
 * hooklane-v1 `Hooklane-Signature` header (`t=<unix>,v1=<hex>[,v1=<hex>…]`,
 * HMAC-SHA256 of `<t>.<raw body>` keyed by the whole `whsec_…` string, as
 * Stripe does) within a 5-minute tolerance, comparing in constant time.
 * `verify-signature-guide.test.ts` runs each against a real signature.
 */
export const VERIFY_SNIPPETS = {
  node: `import { createHmac, timingSafeEqual } from "node:crypto";

/** True when \`header\` (Hooklane-Signature) signs \`rawBody\` (the bytes as received) with \`secret\`. */
export function verifyHooklaneSignature(rawBody, header, secret, toleranceSeconds = 300) {
  const parts = header.split(",").map((part) => part.split("="));
  const timestamp = Number(parts.find(([key]) => key === "t")?.[1]);
  if (!Number.isInteger(timestamp)) return false;
  if (Math.abs(Date.now() / 1000 - timestamp) > toleranceSeconds) return false;
  const expected = createHmac("sha256", secret).update(\`\${timestamp}.\${rawBody}\`).digest();
  return parts
    .filter(([key]) => key === "v1")
    .some(([, value]) => {
      const given = Buffer.from(value ?? "", "hex");
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
`,
  python: `import hashlib
import hmac
import time


def verify_hooklane_signature(raw_body: bytes, header: str, secret: str, tolerance: int = 300) -> bool:
    """True when header (Hooklane-Signature) signs raw_body (the bytes as received) with secret."""
    parts = [part.split("=", 1) for part in header.split(",") if "=" in part]
    timestamps = [value for key, value in parts if key == "t"]
    if not timestamps or not timestamps[0].isdigit():
        return False
    timestamp = int(timestamps[0])
    if abs(time.time() - timestamp) > tolerance:
        return False
    signed = str(timestamp).encode() + b"." + raw_body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(value, expected) for key, value in parts if key == "v1")
`,
  go: `import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
)

// VerifyHooklaneSignature reports whether header (Hooklane-Signature) signs
// rawBody (the bytes as received) with secret, within tolerance.
func VerifyHooklaneSignature(rawBody []byte, header, secret string, tolerance time.Duration) bool {
	var timestamp int64 = -1
	var signatures [][]byte
	for _, part := range strings.Split(header, ",") {
		key, value, _ := strings.Cut(part, "=")
		switch key {
		case "t":
			if t, err := strconv.ParseInt(value, 10, 64); err == nil {
				timestamp = t
			}
		case "v1":
			if sig, err := hex.DecodeString(value); err == nil {
				signatures = append(signatures, sig)
			}
		}
	}
	if timestamp < 0 || math.Abs(float64(time.Now().Unix()-timestamp)) > tolerance.Seconds() {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(rawBody)
	expected := mac.Sum(nil)
	for _, sig := range signatures {
		if hmac.Equal(sig, expected) {
			return true
		}
	}
	return false
}
`,
} as const;

/** The guide as a section of `/docs`. */
export function verifySignatureGuide() {
  return html`<h2 id="verify-a-signature">Verify a signature</h2>
    <p>
      Every delivery carries <code>Hooklane-Signature: t=&lt;unix seconds&gt;,v1=&lt;hex&gt;</code>: an HMAC-SHA256 of
      <code>&lt;t&gt;.&lt;raw body&gt;</code> keyed by the webhook's whole <code>whsec_…</code> secret (the same scheme
      as Stripe's). During a secret rotation there are two <code>v1</code> values; accept either. Verify the raw bytes
      before parsing them, refuse timestamps more than 5 minutes away, and dedupe on <code>Hooklane-Event-Id</code>:
      delivery is at least once. In Node, <code>hooklane/verify</code> does all of this for both schemes
      (<code>verifyWebhook</code>); Standard Webhooks endpoints can use any Standard Webhooks library.
    </p>
    <h3>Node</h3>
    <pre aria-label="Node snippet">${VERIFY_SNIPPETS.node}</pre>
    <h3>Python</h3>
    <pre aria-label="Python snippet">${VERIFY_SNIPPETS.python}</pre>
    <h3>Go</h3>
    <pre aria-label="Go snippet">${VERIFY_SNIPPETS.go}</pre>`;
}
