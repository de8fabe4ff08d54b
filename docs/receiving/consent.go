package webhookconsent

import (
	"net/http"
	"strings"
)

// AnswerConsent answers the consent request a sender makes before its first delivery to this URL: an OPTIONS
// naming the sender in WebHook-Request-Origin, allowed here for sender alone. It returns false, having written
// nothing, for any other request, which goes on to the rest of your handler.
func AnswerConsent(w http.ResponseWriter, r *http.Request, sender string) bool {
	origin := r.Header.Get("WebHook-Request-Origin")
	if r.Method != http.MethodOptions || origin == "" {
		return false
	}
	if !strings.EqualFold(origin, sender) {
		w.WriteHeader(http.StatusForbidden)
		return true
	}
	w.Header().Set("Allow", "POST")
	w.Header().Set("WebHook-Allowed-Origin", origin)
	w.WriteHeader(http.StatusOK)
	return true
}
