// Package webhookkeys verifies hooklane v1a (ed25519) deliveries with the sender's key set, standard library only.
package webhookkeys

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrVerification wraps every refusal: answer it with a 400.
var ErrVerification = errors.New("webhook verification failed")

// KeySet is the sender's published key set (JWKS), fetched from its URL and cached as its Cache-Control allows.
type KeySet struct {
	Keys []struct {
		Kid string `json:"kid"`
		Crv string `json:"crv"`
		X   string `json:"x"`
	} `json:"keys"`
}

// VerifyV1a returns the event (as JSON) of a delivery whose v1a signature verifies with the set's key it names.
func VerifyV1a(payload []byte, header http.Header, keys KeySet) (json.RawMessage, error) {
	kid, timestamp := header.Get("webhook-key-id"), header.Get("webhook-timestamp")
	var public ed25519.PublicKey
	for _, key := range keys.Keys {
		if x, err := base64.RawURLEncoding.DecodeString(key.X); err == nil && key.Kid == kid && key.Crv == "Ed25519" &&
			len(x) == ed25519.PublicKeySize {
			public = x
		}
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if public == nil || err != nil {
		return nil, fmt.Errorf("%w: no key of the set signed this, or the headers are malformed", ErrVerification)
	}
	signed := append([]byte(header.Get("webhook-id")+"."+timestamp+"."), payload...)
	for _, value := range strings.Split(header.Get("webhook-signature"), " ") {
		signature, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(value, "v1a,"))
		if !strings.HasPrefix(value, "v1a,") || err != nil || !ed25519.Verify(public, signed, signature) {
			continue
		}
		if age := time.Since(time.Unix(seconds, 0)); age > 5*time.Minute || age < -5*time.Minute {
			return nil, fmt.Errorf("%w: the signature's timestamp is too far from now", ErrVerification)
		}
		return json.RawMessage(payload), nil
	}
	return nil, fmt.Errorf("%w: no v1a signature matches the body", ErrVerification)
}
