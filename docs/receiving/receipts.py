class Receipts:
    """Which events each stream (one per webhook) has received: every id once, and the sequences
    skipped. In memory to keep it short: keep both in your database, with a unique key on
    (stream, id) so that two deliveries of one event at once take it once."""

    def __init__(self):
        self.seen = set()
        self.highest = {}

    def record(self, stream, event):
        """Returns (first, gap). first is False for an event already received: answer 2xx, do
        nothing. gap is (from, to), the sequences skipped before this event, both included, to
        fetch from GET /v3/events?webhook=…&after=<from - 1>; None when nothing was skipped."""
        key = (stream, event["id"])
        if key in self.seen:
            return False, None
        self.seen.add(key)
        sequence = event.get("sequence")  # absent from webhook.test events
        if sequence is None:
            return True, None
        highest = self.highest.get(stream, 0)
        self.highest[stream] = max(highest, sequence)
        if sequence > highest + 1:
            return True, (highest + 1, sequence - 1)
        return True, None
