#!/bin/sh
# md2man.sh FILE.md NAME SECTION DATE VERSION: a man page (roff) on stdout
# from one of cgperf's man-page-style markdown documents (docs/*.md).
#
# The document's first line, "# TITLE", becomes the page's title line; a
# document without a "## NAME" section (the configuration references) gets one
# made of NAME and that title, so whatis/apropos know the page. The rest is
# converted by pandoc (GitHub markdown to man); links to the other documents
# keep their text.
set -eu
[ $# -eq 5 ] || { echo "usage: md2man.sh FILE.md NAME SECTION DATE VERSION" >&2; exit 2; }
src=$1 name=$2 sect=$3 date=$4 ver=$5
title=$(sed -n '1s/^# *//p' "$src")
[ -n "$title" ] || { echo "md2man: $src: no '# TITLE' first line" >&2; exit 1; }
upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
{
	if ! grep -q '^## NAME$' "$src"; then
		printf '## NAME\n\n%s - %s\n\n' "$name" "$title"
	fi
	# "`cgperf-agent stat`: what it does" -> "cgperf-agent-stat - what it does"
	sed '1d' "$src" | awk -v n="$name" '
		/^## NAME$/ { inname = 1; print; next }
		inname && /^`[^`]*`: / { sub(/^`[^`]*`: /, n " - "); inname = 0 }
		inname && /[^ ]/ { inname = 0 }
		{ print }'
} | pandoc -s -f gfm -t man \
	-M title="$upper" -M section="$sect" -M date="$date" \
	-M footer="cgperf $ver" -M header="cgperf manual"
