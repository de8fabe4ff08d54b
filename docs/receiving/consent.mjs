/**
 * Answers the consent request a sender makes before its first delivery to this URL: an OPTIONS naming the sender
 * in WebHook-Request-Origin, allowed here for `sender` alone. Null for any other request, which goes on to the
 * rest of your handler (a CORS preflight included).
 */
export function answerConsent(request, sender) {
  const origin = request.headers.get("webhook-request-origin");
  if (request.method !== "OPTIONS" || origin === null) return null;
  if (origin.toLowerCase() !== sender.toLowerCase()) return new Response(null, { status: 403 });
  return new Response(null, { status: 200, headers: { allow: "POST", "webhook-allowed-origin": origin } });
}
