#!/bin/sh
# resend-verify.sh: did this send go out through Resend? A send-once provider check
# (for `--verify` and `--precheck`; protocol in README.md next to this file).
#
# What it checks: Resend's list of sent emails (GET /emails, newest first, pages of
# 100), back to the entry's claim (less VERIFY_CLOCK_SLACK), for an email to the
# entry's meta.to whose subject equals meta.subject (ignoring ASCII case, surrounding
# space and Re:/Fwd:/Fw: prefixes). Resend's list shows no tags or headers, so recipient,
# subject and time are all there is to match on. The send should also pass
# SEND_ONCE_KEY as its Idempotency-Key header: Resend then refuses a second send of
# the key for 24 hours, which is the guard this check cannot be.
#
# Contract: stdin is the ledger entry (JSON; meta.to and meta.subject are required);
# SEND_ONCE_KEY is set by send-once. Exit 0 with one JSON object on stdout
# (providerId = Resend's email id, with created_at, last_event and how many emails
# matched) when it is there; exit 1 when every email since the claim was read and none
# matches; exit 2 with a line on stderr for anything else: no API key, HTTP
# 401/403/429/5xx, a timeout, an answer that is not a Resend list, an entry without
# meta.to or meta.subject, more pages than RESEND_MAX_PAGES.
#
# Environment:
#   RESEND_API_KEY      API key with full access (a sending-only key cannot list);
#                       given to curl on stdin, never on its command line (required)
#   RESEND_API_BASE     default https://api.resend.com (tests point it at a fake)
#   RESEND_MAX_PAGES    pages of 100 to read before giving up (default 5)
#   VERIFY_CLOCK_SLACK  seconds before the claim still counted (default 300)
#   VERIFY_MAX_TIME     seconds per HTTP request (default 20: under send-once's 30 s
#                       --check-timeout)
#
# What it cannot see: two sends to one recipient with one subject since the claim
# cannot be told apart (a match is taken as this send; the answer says how many
# matched); an email Resend has not listed yet (right after an uncertain send, "not
# there" proves nothing, and send-once keeps the entry pending); non-ASCII case.
# Needs: curl, jq (1.6 or later).

me=resend-verify
inconclusive() { printf '%s: inconclusive: %s\n' "$me" "$*" >&2; exit 2; }
# Provider text shown on a terminal: printable ASCII only, one line, bounded.
clean() { LC_ALL=C tr -c ' -~' ' ' | cut -c1-300; }
# Escapes a value for a double-quoted curl config string.
curlq() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
number() {
  case $2 in '' | *[!0-9]*) inconclusive "$1 must be a whole number (it is \"$(printf '%s' "$2" | clean)\")" ;; esac
}
# jq: ISO 8601 with any fraction and offset (Resend writes +00:00 or +00) to epoch seconds.
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
[ -n "$key" ] || inconclusive "SEND_ONCE_KEY is not set (send-once sets it for a --verify or --precheck command)"
secret=${RESEND_API_KEY:-}
[ -n "$secret" ] || inconclusive "RESEND_API_KEY is not set"
base=${RESEND_API_BASE:-https://api.resend.com}
base=${base%/}
max_pages=${RESEND_MAX_PAGES:-5}
slack=${VERIFY_CLOCK_SLACK:-300}
max_time=${VERIFY_MAX_TIME:-20}
number RESEND_MAX_PAGES "$max_pages"
number VERIFY_CLOCK_SLACK "$slack"
number VERIFY_MAX_TIME "$max_time"

tmp=$(mktemp -d) || inconclusive "could not make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

cat >"$tmp/entry" || inconclusive "could not read the entry on stdin"
jq -e 'type == "object"' "$tmp/entry" >/dev/null 2>&1 || inconclusive "stdin is not a JSON object (send-once gives the ledger entry there)"
to=$(jq -r '.meta.to | strings' "$tmp/entry")
[ -n "$to" ] || inconclusive "the entry's meta has no \"to\" to search for"
subject=$(jq -r '.meta.subject | strings' "$tmp/entry")
[ -n "$subject" ] || inconclusive "the entry's meta has no subject, and Resend's list has nothing else to match on"
since=$(jq -r --argjson slack "$slack" "$EPOCH"' (.claimedAt | epoch) // empty | . - $slack | floor' "$tmp/entry" 2>/dev/null)
number "the entry's claimedAt (as seconds)" "$since"

curl_config() {
  printf 'header = "Authorization: Bearer %s"\n' "$(curlq "$secret")"
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
  said=$(jq -r '.message // empty | strings' "$tmp/body" 2>/dev/null | clean)
  case $code in
    2??) ;;
    401 | 403) inconclusive "Resend refused the API key (HTTP $code) $said" ;;
    *) inconclusive "Resend answered HTTP $code $said" ;;
  esac
  jq -e 'type == "object"' "$tmp/body" >/dev/null 2>&1 || inconclusive "Resend's answer is not JSON"
}

after=""
page=0
matches="[]"
while :; do
  page=$((page + 1))
  fetch "$base/emails?limit=100$after"
  jq -e '(.data | type) == "array" and (.has_more | type) == "boolean"' "$tmp/body" >/dev/null 2>&1 ||
    inconclusive "Resend's answer is not a list (no data/has_more)"
  matches=$(jq -c --argjson prev "$matches" --argjson since "$since" --arg to "$to" --arg s "$subject" "$EPOCH"'
    def norm: ascii_downcase | sub("^\\s+"; "") | sub("\\s+$"; "")
      | until(test("^(re|fwd?)\\s*:") | not; sub("^(re|fwd?)\\s*:\\s*"; ""));
    ($to | ascii_downcase) as $addr | ($s | norm) as $want
    | $prev + [.data[] | select(type == "object" and (.id | type) == "string")
      | select(((.created_at | epoch) // $since) >= $since)
      | select((.subject | strings | norm) == $want)
      | select([.to] | flatten | map(strings | ascii_downcase) | any(.[]; . == $addr or endswith("<" + $addr + ">")))
      | {providerId: .id, created_at: (.created_at // null), last_event: (.last_event // null)}]' \
    "$tmp/body") || inconclusive "could not read Resend's list"
  # Newest first: once a page reaches back past the claim, older pages cannot match.
  done_paging=$(jq -r --argjson since "$since" "$EPOCH"'
    (.has_more | not) or ([.data[] | (.created_at | epoch) // empty] | min // $since) < $since' "$tmp/body") ||
    inconclusive "could not read Resend's list"
  [ "$done_paging" = true ] && break
  [ "$page" -lt "$max_pages" ] || inconclusive "more than $max_pages pages of emails since the claim; raise RESEND_MAX_PAGES"
  last=$(jq -r '.data[-1].id // empty | strings | @uri' "$tmp/body")
  [ -n "$last" ] || inconclusive "Resend said has_more but its last email has no id"
  after="&after=$last"
done

found=$(printf '%s' "$matches" | jq -c 'if length > 0 then .[0] + {matchedBy: "recipient+subject", matches: length} else empty end')
if [ -n "$found" ]; then
  printf '%s\n' "$found"
  exit 0
fi
printf '%s: not there: no email to this recipient with that subject since the claim\n' "$me" >&2
exit 1
