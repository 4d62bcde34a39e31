#!/bin/sh
# gmail-verify.sh: is this send in the Gmail account's mail? A send-once provider check
# (for `--verify` and `--precheck`; protocol in README.md next to this file), through
# the mailer protocol `send-once mail` speaks (the Gmail wrapper's; see
# `send-once mail --help` and src/provider/mail.rs):
#   $SEND_ONCE_MAILER [--account A] +triage --query QUERY --max N --format json
# which prints a JSON array of messages or {"messages": [...]}. Of each message it
# reads, as `send-once mail` does: the id (id, messageId or message_id); the
# recipients (to: a string such as "Will <will@example.com>, ann@x.org", a list of
# them, or of objects with email/address; else the To header); the subject (subject,
# else the Subject header); a header is looked up by name, in any case, in headers or
# payload.headers, an object or Gmail's list of {name, value}.
#
# What it checks, in order:
#  1. rfc822msgid:SEND_ONCE_MESSAGE_ID, in all mail: the exact Message-ID send-once
#     gives a send command. A send that sets it as the Message-ID is found by it alone.
#  2. Otherwise (the sender could not set a Message-ID), in:sent to:<meta.to>
#     newer_than:<hours since the claim, plus one>h, for a message to that recipient
#     (one of its addresses, display names and angle brackets stripped, ASCII case
#     ignored; a message whose recipients cannot be read is taken on the word of the
#     search's to:) whose subject equals the entry's meta.subject, ignoring ASCII case,
#     surrounding space and Re:/Fwd:/Fw: prefixes (the wrapper's rule, and `mail`'s).
#
# Contract: stdin is the ledger entry (JSON; meta.to, and meta.subject for step 2);
# SEND_ONCE_KEY, SEND_ONCE_ATTEMPT and SEND_ONCE_MESSAGE_ID are set by send-once. Exit 0
# with one JSON object on stdout (providerId = the Gmail message id, matchedBy =
# rfc822msgid or recipient+subject) when it is there; exit 1 when both searches ran and
# found nothing; exit 2 with a line on stderr for anything else: no mailer, a mailer
# that fails, times out or prints something that is not a message list, an entry
# without meta.to, no meta.subject for step 2 (unless GMAIL_MESSAGE_ID_ONLY=1), or a
# step-2 search that came back full (GMAIL_MAX results: there may be more).
#
# Environment:
#   SEND_ONCE_MAILER       the mailer command, split on spaces, no shell and no quoting
#                          (required; e.g. "gws gmail"). `send-once mail` splits the same
#                          variable as a shell would: keep it free of quotes to share it
#   GMAIL_ACCOUNT          passed as --account A before +triage; default: the entry's
#                          meta.account (what `send-once mail --account` recorded), when
#                          it is one plain word such as an address
#   GMAIL_MAX              results per search (default 20, as the wrapper)
#   GMAIL_WINDOW_HOURS     step 2's newer_than, in hours; default: since the claim
#   GMAIL_MESSAGE_ID_ONLY  1: every sender sets the Message-ID, so step 1 missing is
#                          "not there" and step 2 never runs
#   VERIFY_MAX_TIME        seconds per mailer call (default 20, when `timeout` exists:
#                          under send-once's 30 s --check-timeout)
#
# What it cannot see: Gmail's index can trail a send by seconds (right after an
# uncertain send "not there" proves nothing; send-once keeps the entry pending); a
# message deleted from Sent; step 2 cannot tell two sends with one subject apart (a
# match is taken as this send, as the wrapper does); non-ASCII case differences; a
# display name holding a comma is split at it (the address in <...> is still found).
# Needs: jq (1.6 or later), the mailer; `timeout` (coreutils) for VERIFY_MAX_TIME.

me=gmail-verify
inconclusive() { printf '%s: inconclusive: %s\n' "$me" "$*" >&2; exit 2; }
# Mailer text shown on a terminal: printable ASCII only, one line, bounded.
clean() { LC_ALL=C tr -c ' -~' ' ' | cut -c1-300; }
number() {
  case $2 in '' | *[!0-9]*) inconclusive "$1 must be a whole number (it is \"$(printf '%s' "$2" | clean)\")" ;; esac
}

command -v jq >/dev/null 2>&1 || inconclusive "jq is not installed"

key=${SEND_ONCE_KEY:-}
[ -n "$key" ] || inconclusive "SEND_ONCE_KEY is not set (send-once sets it for a --verify or --precheck command)"
msgid=${SEND_ONCE_MESSAGE_ID:-}
mailer=${SEND_ONCE_MAILER:-}
[ -n "$mailer" ] || inconclusive "SEND_ONCE_MAILER is not set (the mailer command, e.g. \"gws gmail\")"
max=${GMAIL_MAX:-20}
max_time=${VERIFY_MAX_TIME:-20}
number GMAIL_MAX "$max"
number VERIFY_MAX_TIME "$max_time"

tmp=$(mktemp -d) || inconclusive "could not make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

cat >"$tmp/entry" || inconclusive "could not read the entry on stdin"
jq -e 'type == "object"' "$tmp/entry" >/dev/null 2>&1 || inconclusive "stdin is not a JSON object (send-once gives the ledger entry there)"

# A Gmail query term must be one word: no space, quote, parenthesis or control.
to=$(jq -r '.meta.to | strings' "$tmp/entry")
case $to in
  '') inconclusive "the entry's meta has no \"to\" to search for" ;;
  *[!A-Za-z0-9.@_+=-]*) inconclusive "the entry's meta.to is not a plain e-mail address: $(printf '%s' "$to" | clean)" ;;
esac
case $msgid in
  '' | *[!A-Za-z0-9.@_+=\<\>-]*) msgid="" ;;
esac
account=${GMAIL_ACCOUNT:-$(jq -r '.meta.account | strings' "$tmp/entry")}
case $account in
  -* | *[!A-Za-z0-9.@_+=-]*) inconclusive "the account is not one plain word: $(printf '%s' "$account" | clean)" ;;
esac

# Runs one +triage search; leaves the messages, as an array, in $tmp/found.
triage() {
  query=$1
  if [ -n "$account" ]; then set -- --account "$account"; else set --; fi
  set -f
  # shellcheck disable=SC2086 # the mailer is a command line split on spaces
  if command -v timeout >/dev/null 2>&1; then
    timeout -k 2 "$max_time" $mailer "$@" +triage --query "$query" --max "$max" --format json \
      </dev/null >"$tmp/out" 2>"$tmp/err"
  else
    $mailer "$@" +triage --query "$query" --max "$max" --format json </dev/null >"$tmp/out" 2>"$tmp/err"
  fi
  rc=$?
  set +f
  case $rc in
    0) ;;
    124) inconclusive "the mailer did not answer within ${max_time}s" ;;
    *) inconclusive "the mailer's +triage failed (exit $rc): $(clean <"$tmp/err")" ;;
  esac
  jq -e 'if type == "array" then .
         elif type == "object" and (.messages | type) == "array" then .messages
         elif type == "object" and .messages == null and has("resultSizeEstimate") then []
         else error("not a list") end
         | if all(.[]; type == "object") then . else error("not objects") end' \
    "$tmp/out" >"$tmp/found" 2>/dev/null ||
    inconclusive "the mailer's +triage printed something that is not a list of messages"
}

if [ -n "$msgid" ]; then
  triage "rfc822msgid:$msgid"
  found=$(jq -c --arg m "$msgid" 'first(.[]) | {providerId: (((.id // .messageId // .message_id) | strings) // $m),
      matchedBy: "rfc822msgid", messageId: $m}' "$tmp/found") || inconclusive "could not read the mailer's answer"
  if [ -n "$found" ]; then
    printf '%s\n' "$found"
    exit 0
  fi
fi

if [ "${GMAIL_MESSAGE_ID_ONLY:-}" = 1 ]; then
  [ -n "$msgid" ] || inconclusive "GMAIL_MESSAGE_ID_ONLY=1 but SEND_ONCE_MESSAGE_ID is not set"
  printf '%s: not there: no message has Message-ID %s\n' "$me" "$msgid" >&2
  exit 1
fi

subject=$(jq -r '.meta.subject | strings' "$tmp/entry")
[ -n "$subject" ] || inconclusive "no message with this send's Message-ID, and the entry's meta has no subject to fall back on"

if [ -n "${GMAIL_WINDOW_HOURS:-}" ]; then
  hours=$GMAIL_WINDOW_HOURS
  number GMAIL_WINDOW_HOURS "$hours"
else
  hours=$(jq -r '.claimedAt | strings
    | capture("^(?<d>[0-9]{4}-[0-9]{2}-[0-9]{2})T(?<t>[0-9]{2}:[0-9]{2}:[0-9]{2})(\\.[0-9]+)?Z$")
    | (now - ((.d + "T" + .t + "Z") | fromdateiso8601)) / 3600 | if . < 0 then 0 else . end | floor + 1' \
    "$tmp/entry" 2>/dev/null)
  number "the entry's claimedAt (as hours ago)" "$hours"
fi

triage "in:sent to:$to newer_than:${hours}h"
found=$(jq -c --arg to "$to" --arg s "$subject" '
  def norm: ascii_downcase | sub("^\\s+"; "") | sub("\\s+$"; "")
    | until(test("^(re|fwd?)\\s*:") | not; sub("^(re|fwd?)\\s*:\\s*"; ""));
  def hdr($n): (.headers // (.payload | objects | .headers) // null) as $h
    | if ($h | type) == "array" then
        first($h[] | objects | select((.name | strings | ascii_downcase) == $n) | .value | strings) // null
      elif ($h | type) == "object" then
        first($h | to_entries[] | select((.key | ascii_downcase) == $n) | .value | strings) // null
      else null end;
  def addrs: [splits(",") | ((capture("<(?<a>[^>]*)>") | .a) // .)
    | sub("^[\\s\"\u0027]+"; "") | sub("[\\s\"\u0027]+$"; "") | ascii_downcase | select(length > 0)];
  def recipients:
    if .to == null then (hdr("to") | if . == null then null else addrs end)
    else [.to] | flatten
      | map(if type == "object" then (.email // .address) else . end | strings | addrs) | flatten
    end;
  ($to | ascii_downcase) as $addr | ($s | norm) as $want
  | first(.[]
    | select(((.subject | strings) // hdr("subject") | strings | norm) == $want)
    | select(recipients as $r | $r == null or any($r[]; . == $addr)))
  | {providerId: (((.id // .messageId // .message_id) | strings) // null), matchedBy: "recipient+subject"}
  | with_entries(select(.value != null))' \
  "$tmp/found") || inconclusive "could not read the mailer's answer"
if [ -n "$found" ]; then
  printf '%s\n' "$found"
  exit 0
fi
count=$(jq 'length' "$tmp/found")
[ "$count" -lt "$max" ] || inconclusive "the Sent search came back full ($count of $max) without a match; there may be more"

printf '%s: not there: no message with its Message-ID, nor to %s with that subject in the last %sh of Sent\n' \
  "$me" "$to" "$hours" >&2
exit 1
