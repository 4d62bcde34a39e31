#!/bin/sh
# postmark-verify.sh: did this send go out through Postmark? A send-once provider check
# (for `--verify` and `--precheck`; protocol in README.md next to this file).
#
# What it checks: Postmark's outbound message search (GET /messages/outbound) for
# messages to the entry's meta.to with tag POSTMARK_TAG (by default the entry's
# meta.intent), from the day before the claim, for one whose Metadata send_once_key is
# SEND_ONCE_KEY. The send must set both:
#   {"To": "...", "Tag": "<intent>", "Metadata": {"send_once_key": "<SEND_ONCE_KEY>",
#    "send_once_attempt": "<SEND_ONCE_ATTEMPT>"}, ...}
# and may set the Message-ID header to SEND_ONCE_MESSAGE_ID. If a message's Metadata
# holds send_once_attempt, it must equal SEND_ONCE_ATTEMPT.
#
# Contract: stdin is the ledger entry (JSON; meta.to is required); SEND_ONCE_KEY and
# SEND_ONCE_ATTEMPT are set by send-once. Exit 0 with one JSON object on stdout
# (providerId = Postmark's MessageID, with its Status and ReceivedAt) when it is there;
# exit 1 when every matching message was read and none carries the key; exit 2 with a
# line on stderr for anything else: no token, HTTP 401/422/5xx, a timeout, an answer
# that is not a message list, more pages than POSTMARK_MAX_PAGES, or a message to the
# same recipient with the same tag since the claim that carries no send_once_key at all
# (a send that did not set the metadata: it may be this one, a person must look).
#
# Environment:
#   POSTMARK_SERVER_TOKEN  server API token (required); given to curl on stdin, never
#                          on its command line
#   POSTMARK_API_BASE      default https://api.postmarkapp.com (tests point it at a fake)
#   POSTMARK_TAG           the tag to filter on; default the entry's meta.intent; set
#                          it empty to search by recipient alone
#   POSTMARK_STREAM        a message stream (messagestream=...), default all
#   POSTMARK_MAX_PAGES     pages of 500 to read before giving up (default 4)
#   VERIFY_CLOCK_SLACK     seconds before the claim still counted (default 300)
#   VERIFY_MAX_TIME        seconds per HTTP request (default 20: under send-once's
#                          30 s --check-timeout)
#
# What it cannot see: a message Postmark has not indexed yet (its search can trail a
# send by seconds: right after an uncertain send, "not there" proves nothing, and
# send-once keeps the entry pending), messages past the server's retention (45 days by
# default), and a send that set neither the tag nor the metadata.
# Needs: curl, jq (1.6 or later).

me=postmark-verify
inconclusive() { printf '%s: inconclusive: %s\n' "$me" "$*" >&2; exit 2; }
# Provider text shown on a terminal: printable ASCII only, one line, bounded.
clean() { LC_ALL=C tr -c ' -~' ' ' | cut -c1-300; }
# Escapes a value for a double-quoted curl config string.
curlq() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
number() {
  case $2 in '' | *[!0-9]*) inconclusive "$1 must be a whole number (it is \"$(printf '%s' "$2" | clean)\")" ;; esac
}
uri() { jq -rn --arg v "$1" '$v | @uri'; }
# jq: ISO 8601 with any fraction and offset (Postmark writes -05:00) to epoch seconds.
EPOCH='def epoch:
  def iso: "^(?<d>[0-9]{4}-[0-9]{2}-[0-9]{2})[T ](?<t>[0-9]{2}:[0-9]{2}:[0-9]{2})(\\.[0-9]+)?(?<z>Z|[+-][0-9]{2}(:?[0-9]{2})?)?$";
  def offset: if . == null or . == "Z" then 0
    else ((.[1:3] | tonumber) * 3600 + (.[3:] | ltrimstr(":") | if . == "" then 0 else tonumber * 60 end))
      * (if .[0:1] == "-" then -1 else 1 end) end;
  if type == "string" and test(iso) then capture(iso) | ((.d + "T" + .t + "Z") | fromdateiso8601) - (.z | offset)
  else null end;'

command -v curl >/dev/null 2>&1 || inconclusive "curl is not installed"
command -v jq >/dev/null 2>&1 || inconclusive "jq is not installed"

key=${SEND_ONCE_KEY:-}
attempt=${SEND_ONCE_ATTEMPT:-}
[ -n "$key" ] || inconclusive "SEND_ONCE_KEY is not set (send-once sets it for a --verify or --precheck command)"
token=${POSTMARK_SERVER_TOKEN:-}
[ -n "$token" ] || inconclusive "POSTMARK_SERVER_TOKEN is not set"
base=${POSTMARK_API_BASE:-https://api.postmarkapp.com}
base=${base%/}
max_pages=${POSTMARK_MAX_PAGES:-4}
slack=${VERIFY_CLOCK_SLACK:-300}
max_time=${VERIFY_MAX_TIME:-20}
number POSTMARK_MAX_PAGES "$max_pages"
number VERIFY_CLOCK_SLACK "$slack"
number VERIFY_MAX_TIME "$max_time"

tmp=$(mktemp -d) || inconclusive "could not make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

cat >"$tmp/entry" || inconclusive "could not read the entry on stdin"
jq -e 'type == "object"' "$tmp/entry" >/dev/null 2>&1 || inconclusive "stdin is not a JSON object (send-once gives the ledger entry there)"

to=$(jq -r '.meta.to | strings' "$tmp/entry")
[ -n "$to" ] || inconclusive "the entry's meta has no \"to\" to search for"
if [ "${POSTMARK_TAG+set}" = set ]; then
  tag=$POSTMARK_TAG
else
  tag=$(jq -r '.meta.intent | strings' "$tmp/entry")
fi
since=$(jq -r --argjson slack "$slack" "$EPOCH"' (.claimedAt | epoch) // empty | . - $slack | floor' "$tmp/entry" 2>/dev/null)
number "the entry's claimedAt (as seconds)" "$since"
# Postmark reads fromdate in US Eastern time: a day earlier covers any offset, and the
# exact cut is made on ReceivedAt below.
fromdate=$(jq -rn --argjson s "$since" '$s - 86400 | todate | .[0:10]')

url="$base/messages/outbound?count=500&recipient=$(uri "$to")&fromdate=$fromdate"
[ -z "$tag" ] || url="$url&tag=$(uri "$tag")"
[ -z "${POSTMARK_STREAM:-}" ] || url="$url&messagestream=$(uri "$POSTMARK_STREAM")"

curl_config() {
  printf 'header = "Accept: application/json"\n'
  printf 'header = "X-Postmark-Server-Token: %s"\n' "$(curlq "$token")"
}

# GET $1 into $tmp/body; anything but a 2xx JSON object is inconclusive.
fetch() {
  code=$(curl_config | curl --silent --show-error --globoff --proto =http,https \
    --connect-timeout 10 --max-time "$max_time" -K - \
    -o "$tmp/body" -w '%{http_code}' "$1" 2>"$tmp/err")
  rc=$?
  case $rc in
    0) ;;
    28) inconclusive "no answer from $base within ${max_time}s" ;;
    *) inconclusive "could not ask $base (curl exit $rc: $(clean <"$tmp/err"))" ;;
  esac
  said=$(jq -r '.Message // empty | strings' "$tmp/body" 2>/dev/null | clean)
  case $code in
    2??) ;;
    401 | 403) inconclusive "Postmark refused the token (HTTP $code) $said" ;;
    *) inconclusive "Postmark answered HTTP $code $said" ;;
  esac
  jq -e 'type == "object"' "$tmp/body" >/dev/null 2>&1 || inconclusive "Postmark's answer is not JSON"
}

offset=0
page=0
while :; do
  page=$((page + 1))
  fetch "$url&offset=$offset"
  jq -e '(.Messages | type) == "array" and (.TotalCount | type) == "number"' "$tmp/body" >/dev/null 2>&1 ||
    inconclusive "Postmark's answer is not a message list (no Messages/TotalCount)"
  found=$(jq -c --arg k "$key" --arg a "$attempt" '
    first(.Messages[]
      | select(type == "object" and (.MessageID | type) == "string" and (.Metadata | type) == "object")
      | select(.Metadata.send_once_key == $k)
      | select((.Metadata.send_once_attempt // null) as $x | $x == null or ($x | tostring) == $a))
    | {providerId: .MessageID, status: (.Status // null), receivedAt: (.ReceivedAt // null),
       matchedBy: "Metadata.send_once_key"}' "$tmp/body") || inconclusive "could not read Postmark's list"
  if [ -n "$found" ]; then
    printf '%s\n' "$found"
    exit 0
  fi
  unkeyed=$(jq -r --argjson since "$since" "$EPOCH"'
    [.Messages[] | select(type == "object")
     | select((.Metadata | type) != "object" or (.Metadata | has("send_once_key") | not))
     | select(((.ReceivedAt | epoch) // $since) >= $since)
     | .MessageID | strings | select(test("^[A-Za-z0-9-]+$"))] | join(" ")' "$tmp/body") ||
    inconclusive "could not read Postmark's list"
  [ -z "$unkeyed" ] || inconclusive "message(s) to this recipient since the claim carry no send_once_key metadata, so they may be this send: $(printf '%s' "$unkeyed" | clean)"
  more=$(jq -r --argjson o "$offset" '(.Messages | length) > 0 and $o + (.Messages | length) < .TotalCount' "$tmp/body")
  [ "$more" = true ] || break
  [ "$page" -lt "$max_pages" ] || inconclusive "more than $max_pages pages of messages to this recipient; raise POSTMARK_MAX_PAGES"
  offset=$((offset + 500))
  [ $((offset + 500)) -le 10000 ] || inconclusive "Postmark searches at most 10,000 messages; this recipient has more"
done

printf '%s: not there: no message to this recipient%s carries the key\n' "$me" "${tag:+ tagged $(printf '%s' "$tag" | clean)}" >&2
exit 1
