// SPDX-License-Identifier: MIT
// Numbers, shares and times as the page shows them.

export function count(n) {
	return Math.round(n).toLocaleString('en-US');
}

// 0.1234 -> "12.34%"
export function pct(x) {
	if (!isFinite(x)) return '-';
	return (x * 100).toFixed(x >= 0.1 ? 1 : 2) + '%';
}

// Compact: 1234 -> "1.23k"
export function si(v) {
	const a = Math.abs(v);
	if (a >= 1e9) return (v / 1e9).toFixed(2) + 'G';
	if (a >= 1e6) return (v / 1e6).toFixed(2) + 'M';
	if (a >= 1e3) return (v / 1e3).toFixed(2) + 'k';
	if (a >= 10 || a === 0) return v.toFixed(a >= 100 || a === 0 ? 0 : 1);
	return v.toPrecision(3);
}

// Unix seconds -> "2024-05-01 12:00:00" local time.
export function time(sec) {
	const d = new Date(sec * 1000);
	const p = (n) => String(n).padStart(2, '0');
	return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// A from/to parameter as people read it: "-1h" stays, Unix seconds become a time.
export function when(v, dflt) {
	if (!v) return dflt;
	if (/^\d+(\.\d+)?$/.test(v)) return time(Number(v));
	return v;
}

// A from/to parameter as Unix seconds (relative to @now): Unix seconds,
// "now", "-90m"-like durations (s m h d w) or RFC 3339; NaN if none.
export function toSeconds(v, now = Date.now() / 1000) {
	if (!v || v === 'now') return now;
	if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
	const m = /^-(\d+(?:\.\d+)?)([smhdw])$/.exec(v);
	if (m) return now - Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]];
	return Date.parse(v) / 1000;
}

// Nanoseconds as people read them: "1.24 s", "35.0 ms", "2 h 05 m".
export function dur(ns) {
	if (!isFinite(ns) || ns <= 0) return '0 s';
	const s = ns / 1e9;
	if (s >= 3600) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} m`;
	if (s >= 60) return `${Math.floor(s / 60)} m ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
	if (s >= 1) return s.toFixed(2) + ' s';
	if (s >= 1e-3) return (s * 1e3).toFixed(1) + ' ms';
	return (s * 1e6).toFixed(0) + ' µs';
}
