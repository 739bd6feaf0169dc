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

// An API link for the export buttons (format folded, pprof or svg).
export function stacksURL(q, format) {
	const p = new URLSearchParams(q);
	p.set('format', format);
	return '/api/v1/stacks?' + p;
}
