#!/bin/sh
# stripe-verify.sh: did this send create a Stripe object? A send-once provider check
# (for `--verify` and `--precheck`; protocol in README.md next to this file).
#
# What it checks: the Stripe list endpoint for STRIPE_OBJECT (payment_intents by
# default), newest first, created since the entry's claim (less VERIFY_CLOCK_SLACK),
# for an object whose metadata[send_once_key] is SEND_ONCE_KEY. The send must set that
# metadata (and should send SEND_ONCE_KEY as its Idempotency-Key):
#   curl https://api.stripe.com/v1/payment_intents -u "$STRIPE_API_KEY:" \
#     -H "Idempotency-Key: $SEND_ONCE_KEY" -d "metadata[send_once_key]=$SEND_ONCE_KEY" ...
# If the object's metadata also holds send_once_attempt, it must equal
# SEND_ONCE_ATTEMPT (so a declined first attempt is not taken for the second).
# It never uses the Search API: search is eventually consistent and can miss an object
# for a minute or more after the write; a list read is not.
#
# Contract: stdin is the ledger entry (JSON); SEND_ONCE_KEY and SEND_ONCE_ATTEMPT are
# set by send-once. Exit 0 with one JSON object on stdout (providerId = the object's
# id, plus its object type, status, created and livemode) when it is there; exit 1 when
# every object created since the claim was read and none carries the key; exit 2 with a
# line on stderr for anything else (no credentials, HTTP 401/403/429/5xx, a timeout,
# an answer that is not a Stripe list, more pages than STRIPE_MAX_PAGES).
#
# Environment:
#   STRIPE_API_KEY         secret or restricted key with read access (required); given
#                          to curl on stdin, never on its command line
#   STRIPE_API_BASE        default https://api.stripe.com (tests point it at a fake)
#   STRIPE_OBJECT          payment_intents (default), charges, checkout/sessions,
#                          invoices, subscriptions, customers, refunds, payouts,
#                          transfers or setup_intents
#   STRIPE_METADATA_FIELD  default send_once_key
#   STRIPE_CUSTOMER        narrow the list to one customer; by default the entry's
#                          meta.to when it is a cus_ id and the object type takes it
#   STRIPE_ACCOUNT         a connected account (sent as Stripe-Account)
#   STRIPE_MAX_PAGES       pages of 100 to read before giving up (default 5)
#   VERIFY_CLOCK_SLACK     seconds before the claim still searched (default 300)
#   VERIFY_MAX_TIME        seconds per HTTP request (default 20: under send-once's
#                          30 s --check-timeout)
#
# What it cannot see: an object whose send did not set the metadata (it answers "not
# there": set the metadata), one created more than VERIFY_CLOCK_SLACK before the claim
# (clock skew), and whether a payment succeeded: an object that exists is a send that
# happened, whatever its status (the status is in the answer for the person reading it).
# Needs: curl, jq (1.6 or later).

me=stripe-verify
inconclusive() { printf '%s: inconclusive: %s\n' "$me" "$*" >&2; exit 2; }
# Provider text shown on a terminal: printable ASCII only, one line, bounded.
clean() { LC_ALL=C tr -c ' -~' ' ' | cut -c1-300; }
# Escapes a value for a double-quoted curl config string.
curlq() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
number() {
  case $2 in '' | *[!0-9]*) inconclusive "$1 must be a whole number (it is \"$(printf '%s' "$2" | clean)\")" ;; esac
}

command -v curl >/dev/null 2>&1 || inconclusive "curl is not installed"
command -v jq >/dev/null 2>&1 || inconclusive "jq is not installed"

key=${SEND_ONCE_KEY:-}
attempt=${SEND_ONCE_ATTEMPT:-}
[ -n "$key" ] || inconclusive "SEND_ONCE_KEY is not set (send-once sets it for a --verify or --precheck command)"
secret=${STRIPE_API_KEY:-}
[ -n "$secret" ] || inconclusive "STRIPE_API_KEY is not set"
base=${STRIPE_API_BASE:-https://api.stripe.com}
base=${base%/}
object=${STRIPE_OBJECT:-payment_intents}
case $object in
  payment_intents | charges | checkout/sessions | invoices | subscriptions | customers | refunds | payouts | transfers | setup_intents) ;;
  *) inconclusive "STRIPE_OBJECT must be one of payment_intents, charges, checkout/sessions, invoices, subscriptions, customers, refunds, payouts, transfers, setup_intents" ;;
esac
field=${STRIPE_METADATA_FIELD:-send_once_key}
case $field in '' | *[!A-Za-z0-9_-]*) inconclusive "STRIPE_METADATA_FIELD must be letters, digits, _ or -" ;; esac
max_pages=${STRIPE_MAX_PAGES:-5}
slack=${VERIFY_CLOCK_SLACK:-300}
max_time=${VERIFY_MAX_TIME:-20}
number STRIPE_MAX_PAGES "$max_pages"
number VERIFY_CLOCK_SLACK "$slack"
number VERIFY_MAX_TIME "$max_time"

tmp=$(mktemp -d) || inconclusive "could not make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

cat >"$tmp/entry" || inconclusive "could not read the entry on stdin"
jq -e 'type == "object"' "$tmp/entry" >/dev/null 2>&1 || inconclusive "stdin is not a JSON object (send-once gives the ledger entry there)"

# Claim times are ISO 8601 (send-once, Node); fractions and offsets allowed.
since=$(jq -r --argjson slack "$slack" '
  .claimedAt | if type == "string" then . else "" end
  | capture("^(?<d>[0-9]{4}-[0-9]{2}-[0-9]{2})T(?<t>[0-9]{2}:[0-9]{2}:[0-9]{2})(\\.[0-9]+)?Z$")
  | ((.d + "T" + .t + "Z") | fromdateiso8601) - $slack | floor' "$tmp/entry" 2>/dev/null)
number "the entry's claimedAt (as seconds)" "$since"

customer=${STRIPE_CUSTOMER:-}
if [ -z "$customer" ]; then
  case $object in
    payment_intents | charges | checkout/sessions | invoices | subscriptions)
      customer=$(jq -r '.meta.to | strings | select(test("^cus_[A-Za-z0-9]+$"))' "$tmp/entry") ;;
  esac
fi

curl_config() {
  printf 'header = "Authorization: Bearer %s"\n' "$(curlq "$secret")"
  [ -z "${STRIPE_ACCOUNT:-}" ] || printf 'header = "Stripe-Account: %s"\n' "$(curlq "$STRIPE_ACCOUNT")"
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
  said=$(jq -r '.error.message // empty | strings' "$tmp/body" 2>/dev/null | clean)
  case $code in
    2??) ;;
    401 | 403) inconclusive "Stripe refused the credentials (HTTP $code) $said" ;;
    *) inconclusive "Stripe answered HTTP $code $said" ;;
  esac
  jq -e 'type == "object"' "$tmp/body" >/dev/null 2>&1 || inconclusive "Stripe's answer is not JSON"
}

url="$base/v1/$object?limit=100&created%5Bgte%5D=$since"
[ -z "$customer" ] || url="$url&customer=$(jq -rn --arg v "$customer" '$v | @uri')"
after=""
page=0
while :; do
  page=$((page + 1))
  fetch "$url$after"
  jq -e '.object == "list" and (.data | type) == "array" and (.has_more | type) == "boolean"' \
    "$tmp/body" >/dev/null 2>&1 || inconclusive "Stripe's answer is not a list (no object/data/has_more)"
  found=$(jq -c --arg f "$field" --arg k "$key" --arg a "$attempt" '
    first(.data[]
      | select(type == "object" and (.id | type) == "string" and (.metadata | type) == "object")
      | select(.metadata[$f] == $k)
      | select((.metadata.send_once_attempt // null) as $x | $x == null or ($x | tostring) == $a))
    | {providerId: .id, object: (.object // null), status: (.status // null),
       created: (.created // null), livemode: (.livemode // null), matchedBy: ("metadata." + $f)}' \
    "$tmp/body") || inconclusive "could not read Stripe's list"
  if [ -n "$found" ]; then
    printf '%s\n' "$found"
    exit 0
  fi
  more=$(jq -r '.has_more' "$tmp/body")
  [ "$more" = true ] || break
  [ "$page" -lt "$max_pages" ] || inconclusive "more than $max_pages pages of $object since the claim; raise STRIPE_MAX_PAGES or set STRIPE_CUSTOMER"
  last=$(jq -r '.data[-1].id // empty | strings | @uri' "$tmp/body")
  [ -n "$last" ] || inconclusive "Stripe said has_more but its last object has no id"
  after="&starting_after=$last"
done

printf '%s: not there: no %s with metadata[%s] = the key, created since the claim\n' "$me" "$object" "$field" >&2
exit 1
