// Package webhooks verifies hooklane webhook deliveries, in either scheme, with the standard library only.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// Tolerance is how far a signature's timestamp may be from now, either way.
const Tolerance = 5 * time.Minute

// Event is the thin body every delivery carries: identifiers only.
type Event struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Created  string `json:"created"`
	Livemode bool   `json:"livemode"`
	Sequence int64  `json:"sequence"` // 1, 2, 3… per webhook; 0 (absent) for webhook.test events
	Data     struct {
		Object  string  `json:"object"`
		ID      string  `json:"id"`
		Account *string `json:"account"`
	} `json:"data"`
}

// Verify returns the event of a genuine delivery. payload is the raw body; brand is the prefix of
// <Brand>-Signature ("Hooklane" unless the sender is configured otherwise).
func Verify(payload []byte, header http.Header, secret, brand string) (*Event, error) {
	var timestamp, expected string
	var candidates []string
	if signatures := header.Get("Webhook-Signature"); signatures != "" {
		// Standard Webhooks: "<id>.<timestamp>.<body>", keyed by the base64 after whsec_.
		timestamp = header.Get("Webhook-Timestamp")
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			return nil, fmt.Errorf("the secret is not whsec_ followed by base64: %v", err)
		}
		signed := header.Get("Webhook-Id") + "." + timestamp + "."
		expected = base64.StdEncoding.EncodeToString(mac(key, signed, payload))
		for _, value := range strings.Split(signatures, " ") {
			if strings.HasPrefix(value, "v1,") {
				candidates = append(candidates, strings.TrimPrefix(value, "v1,"))
			}
		}
	} else {
		// hooklane-v1 (as Stripe): "t=<timestamp>,v1=<hex>[,v1=<hex>]", "<timestamp>.<body>" keyed by the whole secret.
		for _, element := range strings.Split(header.Get(brand+"-Signature"), ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(element), "=")
			switch name {
			case "t":
				timestamp = value
			case "v1":
				candidates = append(candidates, value)
			}
		}
		expected = hex.EncodeToString(mac([]byte(secret), timestamp+".", payload))
	}

	seconds, err := strconv.ParseUint(timestamp, 10, 63)
	if err != nil {
		return nil, fmt.Errorf("%w: missing or malformed signature headers", ErrVerification)
	}
	matched := false
	for _, candidate := range candidates {
		if hmac.Equal([]byte(candidate), []byte(expected)) {
			matched = true
		}
	}
	if !matched {
		return nil, fmt.Errorf("%w: no signature matches the body and the secret", ErrVerification)
	}
	if age := time.Since(time.Unix(int64(seconds), 0)); age > Tolerance || age < -Tolerance {
		return nil, fmt.Errorf("%w: the signature's timestamp is too far from now", ErrVerification)
	}
	var event Event
	if err := json.Unmarshal(payload, &event); err != nil {
		return nil, fmt.Errorf("%w: the body is not JSON: %v", ErrVerification, err)
	}
	return &event, nil
}

func mac(key []byte, prefix string, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(prefix))
	h.Write(payload)
	return h.Sum(nil)
}
