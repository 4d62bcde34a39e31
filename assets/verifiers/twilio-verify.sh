#!/bin/sh
# twilio-verify.sh: did this send create a Twilio message? A send-once provider check
# (for `--verify` and `--precheck`; protocol in README.md next to this file).
#
# What it checks: Twilio's Messages list for the account (To = the entry's meta.to,
# From = TWILIO_FROM when set), newest first, back to the entry's claim (less
# VERIFY_CLOCK_SLACK), by date_created. Twilio keeps no metadata on a message, so
# recipient, sender and time are all there is: exactly one message since the claim is
# this send; none is "not there"; more than one cannot be told apart and is left to a
# person. Twilio creates the Message record within the POST that sends it, so the list
# does not lag the way a search index does.
#
# Contract: stdin is the ledger entry (JSON; meta.to is required, in E.164 or as
# whatsapp:+...); SEND_ONCE_KEY is set by send-once. Exit 0 with one JSON object on
# stdout (providerId = the message sid, with its status and date_created) when exactly
# one message matches; exit 1 when every message since the claim was read and none
# matches; exit 2 with a line on stderr for anything else: no credentials, HTTP
# 401/403/429/5xx, a timeout, an answer that is not a message page, more than one
# match, more pages than TWILIO_MAX_PAGES.
#
# Environment:
#   TWILIO_ACCOUNT_SID  the account (required)
#   TWILIO_AUTH_TOKEN   its auth token (required); or TWILIO_API_KEY + TWILIO_API_SECRET;
#                       given to curl on stdin, never on its command line
#   TWILIO_FROM         the sending number or messaging service's number, to narrow it
#   TWILIO_API_BASE     default https://api.twilio.com (tests point it at a fake)
#   TWILIO_MAX_PAGES    pages of 100 to read before giving up (default 5)
#   VERIFY_CLOCK_SLACK  seconds before the claim still counted (default 300)
#   VERIFY_MAX_TIME     seconds per HTTP request (default 20: under send-once's 30 s
#                       --check-timeout)
#
# What it cannot see: which of several messages to one number since the claim is this
# one (give each kind of send its own TWILIO_FROM); a message whose status is failed or
# undelivered still counts as sent (it was accepted; the status is in the answer);
# messages deleted from the account.
# Needs: curl, jq (1.6 or later).

me=twilio-verify
inconclusive() { printf '%s: inconclusive: %s\n' "$me" "$*" >&2; exit 2; }
# Provider text shown on a terminal: printable ASCII only, one line, bounded.
clean() { LC_ALL=C tr -c ' -~' ' ' | cut -c1-300; }
# Escapes a value for a double-quoted curl config string.
curlq() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
number() {
  case $2 in '' | *[!0-9]*) inconclusive "$1 must be a whole number (it is \"$(printf '%s' "$2" | clean)\")" ;; esac
}
uri() { jq -rn --arg v "$1" '$v | @uri'; }
# jq: ISO 8601 (the claim) and RFC 2822 (Twilio's "Wed, 18 Aug 2010 20:01:40 +0000") to
# epoch seconds.
EPOCH='def epoch:
  def iso: "^(?<d>[0-9]{4}-[0-9]{2}-[0-9]{2})[T ](?<t>[0-9]{2}:[0-9]{2}:[0-9]{2})(\\.[0-9]+)?(?<z>Z|[+-][0-9]{2}(:?[0-9]{2})?)?$";
  def rfc: "^[A-Za-z]{3}, (?<d>[0-9]{1,2}) (?<m>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?<y>[0-9]{4}) (?<t>[0-9]{2}:[0-9]{2}:[0-9]{2}) (?<z>[+-][0-9]{4})$";
  def offset: if . == null or . == "Z" then 0
    else ((.[1:3] | tonumber) * 3600 + (.[3:] | ltrimstr(":") | if . == "" then 0 else tonumber * 60 end))
      * (if .[0:1] == "-" then -1 else 1 end) end;
  if type != "string" then null
  elif test(iso) then capture(iso) | ((.d + "T" + .t + "Z") | fromdateiso8601) - (.z | offset)
  elif test(rfc) then capture(rfc)
    | .m as $m | (["Jan","Feb","Mar","Apr","May","Jun","Jul","Aug","Sep","Oct","Nov","Dec"] | index([$m])) as $i
    | ("\(.y)-\(if $i < 9 then "0" else "" end)\($i + 1)-\(if (.d | length) == 1 then "0" else "" end)\(.d)T\(.t)Z"
       | fromdateiso8601) - (.z | offset)
  else null end;'

command -v curl >/dev/null 2>&1 || inconclusive "curl is not installed"
command -v jq >/dev/null 2>&1 || inconclusive "jq is not installed"

key=${SEND_ONCE_KEY:-}
[ -n "$key" ] || inconclusive "SEND_ONCE_KEY is not set (send-once sets it for a --verify or --precheck command)"
sid=${TWILIO_ACCOUNT_SID:-}
case $sid in
  AC*) ;;
  *) inconclusive "TWILIO_ACCOUNT_SID is not set (or is not an AC... sid)" ;;
esac
case $sid in *[!A-Za-z0-9]*) inconclusive "TWILIO_ACCOUNT_SID holds characters a sid does not" ;; esac
if [ -n "${TWILIO_API_KEY:-}" ]; then
  user=$TWILIO_API_KEY
  pass=${TWILIO_API_SECRET:-}
else
  user=$sid
  pass=${TWILIO_AUTH_TOKEN:-}
fi
[ -n "$pass" ] || inconclusive "TWILIO_AUTH_TOKEN (or TWILIO_API_KEY and TWILIO_API_SECRET) is not set"
base=${TWILIO_API_BASE:-https://api.twilio.com}
base=${base%/}
max_pages=${TWILIO_MAX_PAGES:-5}
slack=${VERIFY_CLOCK_SLACK:-300}
max_time=${VERIFY_MAX_TIME:-20}
number TWILIO_MAX_PAGES "$max_pages"
number VERIFY_CLOCK_SLACK "$slack"
number VERIFY_MAX_TIME "$max_time"

tmp=$(mktemp -d) || inconclusive "could not make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

cat >"$tmp/entry" || inconclusive "could not read the entry on stdin"
jq -e 'type == "object"' "$tmp/entry" >/dev/null 2>&1 || inconclusive "stdin is not a JSON object (send-once gives the ledger entry there)"
to=$(jq -r '.meta.to | strings' "$tmp/entry")
[ -n "$to" ] || inconclusive "the entry's meta has no \"to\" to search for"
since=$(jq -r --argjson slack "$slack" "$EPOCH"' (.claimedAt | epoch) // empty | . - $slack | floor' "$tmp/entry" 2>/dev/null)
number "the entry's claimedAt (as seconds)" "$since"

curl_config() {
  printf 'user = "%s:%s"\n' "$(curlq "$user")" "$(curlq "$pass")"
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
    401 | 403) inconclusive "Twilio refused the credentials (HTTP $code) $said" ;;
    *) inconclusive "Twilio answered HTTP $code $said" ;;
  esac
  jq -e 'type == "object"' "$tmp/body" >/dev/null 2>&1 || inconclusive "Twilio's answer is not JSON"
}

url="$base/2010-04-01/Accounts/$sid/Messages.json?PageSize=100&To=$(uri "$to")"
[ -z "${TWILIO_FROM:-}" ] || url="$url&From=$(uri "$TWILIO_FROM")"
page=0
matches="[]"
while :; do
  page=$((page + 1))
  fetch "$url"
  jq -e '(.messages | type) == "array"' "$tmp/body" >/dev/null 2>&1 ||
    inconclusive "Twilio's answer is not a message page (no messages)"
  matches=$(jq -c --argjson prev "$matches" --argjson since "$since" --arg to "$to" "$EPOCH"'
    $prev + [.messages[] | select(type == "object" and (.sid | type) == "string")
      | select(.to == null or .to == $to)
      | select(((.date_created | epoch) // $since) >= $since)
      | {providerId: .sid, status: (.status // null), date_created: (.date_created // null)}]' \
    "$tmp/body") || inconclusive "could not read Twilio's page"
  # Newest first: once a page reaches back past the claim, older pages cannot match.
  next=$(jq -r --argjson since "$since" "$EPOCH"'
    if ([.messages[] | (.date_created | epoch) // empty] | min // $since) < $since then ""
    else .next_page_uri // "" | strings end' "$tmp/body") || inconclusive "could not read Twilio's page"
  [ -n "$next" ] || break
  case $next in
    /2010-04-01/*) ;;
    *) inconclusive "Twilio's next_page_uri is not one of its own paths" ;;
  esac
  [ "$page" -lt "$max_pages" ] || inconclusive "more than $max_pages pages of messages to this number since the claim; raise TWILIO_MAX_PAGES"
  url="$base$next"
done

count=$(printf '%s' "$matches" | jq 'length')
case $count in
  0)
    printf '%s: not there: no message to this number since the claim\n' "$me" >&2
    exit 1
    ;;
  1)
    printf '%s' "$matches" | jq -c '.[0] + {matchedBy: "recipient+time"}'
    exit 0
    ;;
  *)
    inconclusive "$count messages to this number since the claim ($(printf '%s' "$matches" | jq -r 'map(.providerId) | join(" ")' | clean)): which one is this send is for a person to say"
    ;;
esac
