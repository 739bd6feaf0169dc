// SPDX-License-Identifier: MIT
// The exporter's JSON and text APIs. Errors are thrown with the server's
// one-line reason, so a view can show it.

export class ApiError extends Error {
	constructor(status, text) {
		super(text || `HTTP ${status}`);
		this.status = status;
	}
}

async function fetchText(path, q, signal) {
	const url = q && [...q.keys()].length ? `${path}?${q}` : path;
	let r;
	try {
		r = await fetch(url, { signal, headers: { Accept: '*/*' } });
	} catch (e) {
		if (e.name === 'AbortError') throw e;
		throw new ApiError(0, `cannot reach the exporter (${e.message})`);
	}
	const text = await r.text();
	if (!r.ok) throw new ApiError(r.status, text.trim().split('\n')[0]);
	return text;
}

export async function targets(signal) {
	return JSON.parse(await fetchText('/api/v1/targets', null, signal));
}

// /api/v1/stacks?format=folded of @q: the text; '' for an empty selection (404).
export async function folded(q, signal) {
	const p = new URLSearchParams(q);
	p.set('format', 'folded');
	try {
		return await fetchText('/api/v1/stacks', p, signal);
	} catch (e) {
		if (e.status === 404) return '';
		throw e;
	}
}

export async function series(q, signal) {
	const d = JSON.parse(await fetchText('/api/v1/series', q, signal));
	if (d.status !== 'success') throw new ApiError(200, d.error || 'series query failed');
	return d.data.result;
}

// /api/v1/stacks?format=json of @q: the parsed answer; null for an empty selection (404).
export async function stacksJSON(q, signal) {
	const p = new URLSearchParams(q);
	p.set('format', 'json');
	try {
		return JSON.parse(await fetchText('/api/v1/stacks', p, signal));
	} catch (e) {
		if (e.status === 404) return null;
		throw e;
	}
}

// /api/v1/diff?format=json of @q (target keys and base_* keys): the
// parsed answer; null when both sides are empty (404).
export async function diffJSON(q, signal) {
	const p = new URLSearchParams(q);
	p.set('format', 'json');
	try {
		return JSON.parse(await fetchText('/api/v1/diff', p, signal));
	} catch (e) {
		if (e.status === 404) return null;
		throw e;
	}
}

export function diffURL(q, format) {
	const p = new URLSearchParams(q);
	p.set('format', format);
	return '/api/v1/diff?' + p;
}

// An API link for the export buttons (format folded, pprof or svg).
export function stacksURL(q, format) {
	const p = new URLSearchParams(q);
	p.set('format', format);
	return '/api/v1/stacks?' + p;
}
