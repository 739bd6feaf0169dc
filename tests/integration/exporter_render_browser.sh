#!/bin/bash
# The flame graph's script in a real browser (headless Chromium): a test
# script appended to a rendered SVG drives it after load, through the
# page's own functions and real DOM events, and writes what it saw into
# the document, which Chromium dumps:
# - click on a frame zooms: the frame spans the width, its child scales
#   with it, its caller is shown full width and dimmed, unrelated frames
#   are hidden; Escape resets;
# - search colours matching frames and shows their share of all samples
#   (a function in two stacks counted in both, nested matches once);
#   "Reset Search" restores the colours;
# - hovering a frame shows its name and figures at the bottom.
# RENDER_TOOL overrides the tool's path.
. "$(dirname "$0")/../lib/common.sh"

TOOL=${RENDER_TOOL:-$BUILD_DIR/tools/render_tool}
[[ -x $TOOL ]] || fail "no $TOOL (make O=${BUILD:-build} build-tests)"
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	skip "chromium not installed (Debian package chromium)"

# 8 samples: main 6 (a 2, b 4 (c 3)), other 2 (c 2 (c 1))
printf '%s\n' 'main;a 2' 'main;b;c 3' 'main;b 1' 'other;c 1' 'other;c;c 1' >"$TMP/in.folded"
"$TOOL" --title 'browser <test>' svg <"$TMP/in.folded" >"$TMP/g.svg" || fail "render_tool svg"

# The driver: runs after the page's own onload, reports into #testresult.
cat >"$TMP/driver.js" <<'EOF'
window.addEventListener("load", function () { setTimeout(function () {
	var out = [];
	function frame(name, nth) {
		var n = 0;
		for (var i = 0; i < frames.length; i++)
			if (frames[i].name == name && n++ == (nth || 0))
				return frames[i];
		return null;
	}
	function vis(f) {
		return f.g.style.display == "none" ? "hidden" : f.r.getAttribute("width");
	}
	function click(f) {
		f.r.dispatchEvent(new MouseEvent("click", { bubbles: true }));
	}
	try {
		var b = frame("b"), c = frame("c"), main = frame("main"), other = frame("other"),
		    a = frame("a"), all = frame("all");
		out.push("frames=" + frames.length);
		click(b);
		out.push("zoom b=" + vis(b) + " c=" + vis(c) + " main=" + vis(main) + "/" +
			 main.g.getAttribute("class") + " a=" + vis(a) + " other=" + vis(other) +
			 " all=" + vis(all) + " label=" + b.t.textContent + " reset=" +
			 unzoombtn.style.opacity);
		window.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
		out.push("escape b=" + vis(b) + " other=" + vis(other) + " main=" +
			 main.g.getAttribute("class") + " reset=" + unzoombtn.style.opacity);
		search("^c$");
		out.push("search " + matched.textContent + " c=" + c.r.getAttribute("fill") +
			 " b=" + (b.r.getAttribute("fill") == b.fill ? "kept" : "changed") +
			 " button=" + searchbtn.textContent);
		searchbtn.dispatchEvent(new MouseEvent("click", { bubbles: true }));
		out.push("reset c=" + (c.r.getAttribute("fill") == c.fill ? "kept" : "changed") +
			 " matched=[" + matched.textContent + "] button=" + searchbtn.textContent);
		search("^(main|b)$");
		out.push("nested " + matched.textContent);
		reset_search();
		c.r.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
		out.push("hover " + details.textContent);
	} catch (e) {
		out.push("error " + e);
	}
	document.getElementById("testresult").textContent = out.join("\n");
}, 0); }, false);
EOF
{
	sed '$d' "$TMP/g.svg" # all but </svg>
	echo '<text id="testresult" x="0" y="0">not run</text>'
	echo '<script type="text/ecmascript"><![CDATA['
	cat "$TMP/driver.js"
	echo ']]></script>'
	echo '</svg>'
} >"$TMP/t.svg"
xmllint --noout "$TMP/t.svg" || fail "the driven SVG is not well-formed"

timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$TMP/chrome" --virtual-time-budget=5000 --dump-dom "file://$TMP/t.svg" \
	>"$TMP/dom.txt" 2>"$TMP/chrome.err" || { tail -5 "$TMP/chrome.err"; fail "chromium failed"; }
# The result text, entities decoded by xmllint.
res=$(xmllint --xpath '//*[local-name()="text"][@id="testresult"]/text()' "$TMP/dom.txt" 2>/dev/null ||
	sed -n '/id="testresult"/,/<\/text>/p' "$TMP/dom.txt")
printf '%s\n' "$res" | sed 's/^/# /'

want() { grep -qxF -- "$1" <<<"$res" || fail "browser: want line '$1'"; }
# all, main, a, b, c, other, c, c
want "frames=8"
# b has 4 of main's 6 samples: zoomed it spans 1180 px, c (3 of 4) 885 px
want "zoom b=1180.00 c=885.00 main=1180.00/f parent a=hidden other=hidden all=1180.00 label=b reset=1"
want "escape b=590.00 other=295.00 main=f reset=0"
# c: 3 under b, 2 under other (its child c nested, counted once) = 5 of 8
want "search Matched: 62.50% c=rgb(230,0,230) b=kept button=Reset Search"
want "reset c=kept matched=[ ] button=Search"
# main (6) and b inside it: 6 of 8
want "nested Matched: 75.00%"
want "hover Function: c (3 samples, 37.50%)"
echo "PASS"
