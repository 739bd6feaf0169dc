// SPDX-License-Identifier: MIT
// The view's whole state, owned here and kept in the URL query, so that a
// link reproduces what one sees and back/forward walk through it. Keys are
// the API's parameter names where the API has them (docs/ui.md):
//   host cgroup container pod event from to      the selection (/api/v1/stacks)
//   base_host base_cgroup ... base_from base_to  a diff's base side
//   view    flame|icicle|top|sandwich|diff|series|heatmap (default flame)
//   metric  the series' counter (/api/v1/series' event; default cpu)
//   top step  the series' top N and step
//   search  a regular expression highlighted in the flame graph
//   zoom    the zoomed frame, its path from the root joined by ';'
// Everything else in the query is kept as it is.

export const SELECTION = ['host', 'cgroup', 'container', 'pod', 'event', 'from', 'to'];
export const BASE = SELECTION.map((k) => 'base_' + k);
export const VIEWS = ['flame', 'icicle', 'top', 'sandwich', 'diff', 'series', 'heatmap'];

const listeners = [];
let params = new URLSearchParams(location.search);

export function get(k) {
	const v = params.get(k);
	return v === null || v === '' ? undefined : v;
}

export function view() {
	const v = get('view');
	return VIEWS.includes(v) ? v : 'flame';
}

// The selection's parameters (prefix '' or 'base_') for an API query.
export function selection(prefix = '') {
	const q = new URLSearchParams();
	for (const k of SELECTION) {
		const v = get(prefix + k);
		if (v !== undefined) q.set(k, v);
	}
	return q;
}

// Change keys (undefined or '' removes one) and tell the listeners which
// changed. A new history entry unless @replace.
export function set(patch, { replace = false } = {}) {
	const next = new URLSearchParams(params);
	const changed = [];
	for (const [k, v] of Object.entries(patch)) {
		const old = next.get(k);
		if (v === undefined || v === null || v === '') next.delete(k);
		else next.set(k, String(v));
		if (old !== next.get(k)) changed.push(k);
	}
	if (!changed.length) return;
	params = next;
	const qs = params.toString();
	const url = location.pathname + (qs ? '?' + qs : '');
	if (replace) history.replaceState(null, '', url);
	else history.pushState(null, '', url);
	notify(changed);
}

export function subscribe(fn) {
	listeners.push(fn);
}

function notify(changed) {
	for (const fn of listeners) fn(new Set(changed));
}

addEventListener('popstate', () => {
	const old = params;
	params = new URLSearchParams(location.search);
	const keys = new Set([...old.keys(), ...params.keys()]);
	notify([...keys].filter((k) => old.get(k) !== params.get(k)));
});
