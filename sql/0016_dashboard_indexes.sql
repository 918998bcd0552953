-- Courier 0016: indexes the web dashboard (jobctl dashboard) needs to answer fast at any size.

-- Dead letters waiting for a decision, by reason, newest first: the overview's capped
-- count per reason and /dead?reason=... read this index only as far as a page or the cap.
create index dead_letters_waiting_reason_idx on courier.dead_letters (reason, failed_at, id)
    where replayed_at is null;
