#!/bin/bash
# The explorer page (docs/ui.md) in Debian's Chromium, driven by
# playwright-core under node's test runner (web/test/ui_page.test.mjs),
# against a real cgperf-exporter fed by gen_batch pushes: one host with
# stacks of known shape, a second host of another shape (the diff's base),
# the hostile-names fixture, and a host named as HTML markup. Checks: no
# console error, the CSP header, ETags (304), the flame graph canvas drawn,
# search's share equal to the folded API's (within 0.5 points), click-zoom
# and the breadcrumb, the URL reproducing the view after a reload and with
# back/forward, the series view and a drag setting from/to, hostile names
# as text; the top table's shares equal the folded API's, the sandwich's
# callers and callees, focus and hide totals, the diff marking functions of
# one side only, each new view's URL surviving a reload, empty selections
# explained (docs/ui.md lists them). Screenshots go to
# $CGPERF_TEST_LOGDIR/ui_page/ (tests/run.sh's log directory), else
# $BUILD/tests/ui_page/.
# holds: chromium
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
need curl
command -v node >/dev/null || fail "node missing (packaging/install-deps.sh installs nodejs)"
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	fail "chromium missing (packaging/install-deps.sh installs it)"
[[ -d $ROOT/web/node_modules/playwright-core ]] ||
	fail "web/node_modules lacks playwright-core (packaging/install-deps.sh runs npm ci)"
GEN=$BUILD_DIR/tools/gen_batch
[[ -x $GEN ]] || fail "no $GEN (make build-tests)"

exporter_up
host=web-1 evil='<img src=x onerror=window.__pwned=1>'
"$GEN" --cgroups 6 --stacks 200 --depth 12 --host "$host" --agent ui-a --batches 3 push "$ex/api/v1/push" >/dev/null ||
	fail "gen_batch push"
# A second host of another shape (deeper stacks, more of them): the diff
# of web-1 against it has functions on either side alone.
base=web-2
"$GEN" --cgroups 3 --stacks 400 --depth 9 --host "$base" --agent ui-b --batches 2 push "$ex/api/v1/push" >/dev/null ||
	fail "gen_batch push (base host)"
"$GEN" --cgroups 2 --stacks 5 --host "$evil" --agent ui-evil --batches 1 push "$ex/api/v1/push" >/dev/null ||
	fail "gen_batch push (markup host)"
"$GEN" --seq 1 hostile "$TMP/hostile.pb" || fail "gen_batch hostile"
[[ $(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/hostile.pb" "$ex/api/v1/push") == 200 ]] ||
	fail "the hostile batch was not stored"

# The page's route and the old index, before the browser.
curl -sf -D "$TMP/page.h" -o "$TMP/page.html" "$ex/" || fail "GET / failed"
grep -qi '^content-security-policy:.*script-src .self.' "$TMP/page.h" || fail "GET / has no CSP: $(cat "$TMP/page.h")"
grep -q '<script type="module" src="/ui/app.js">' "$TMP/page.html" || fail "GET / is not the explorer page"
curl -sf "$ex/index" | grep -q "href=\"/api/v1/stacks?host=$host&amp;format=svg\"" || fail "/index lost its links"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$ex/ui/..%2fetc") == 404 ]] || fail "/ui/ served a bad name"

shots=${CGPERF_TEST_LOGDIR:-$BUILD_DIR/tests}/ui_page
mkdir -p "$shots"
cd "$ROOT/web" || fail "no web/"
CGPERF_UI_URL=$ex CGPERF_UI_HOST=$host CGPERF_UI_BASE=$base CGPERF_UI_FUNC='^hash_' CGPERF_UI_EVIL=$evil CGPERF_UI_SHOTS=$shots \
	CHROMIUM=$CHROMIUM timeout "$(scaled 240)" node --test --test-concurrency=1 test/ ||
	fail "browser tests failed (screenshots in $shots)"
info "screenshots: $shots"
echo PASS
