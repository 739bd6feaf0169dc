// SPDX-License-Identifier: MIT
// The page's controller: the toolbar (event, time range, view), the
// selection summary and export links, and the view in the main area.
// Views are modules registered in VIEWS: each is built on an element,
// loads what it needs for the current state (state.js) and redraws when
// the keys it cares about change.
import * as api from './api.js';
import { $, el, fill } from './dom.js';
import { DiffView, diffQuery, hasBase } from './diff.js';
import { FlameView, legend, transformChips } from './flame.js';
import { count, time, when } from './fmt.js';
import { Picker } from './picker.js';
import { Data } from './profile.js';
import { SandwichView } from './sandwich.js';
import { SeriesView } from './series.js';
import * as state from './state.js';
import { TopView } from './top.js';

// A view: its tab's label, and make(root) giving {load(signal), sync?(), destroy()}.
// Views listed without make are part of the URL vocabulary but not built yet.
const VIEWS = {
	flame: { label: 'Flame graph', make: (root) => withEmpty(root, (box) => profileView(box, false)) },
	icicle: { label: 'Icicle', make: (root) => withEmpty(root, (box) => profileView(box, true)) },
	series: { label: 'Series', make: (root) => new SeriesView(root) },
	top: { label: 'Top table', make: (root) => withEmpty(root, (box) => new TopView(box, stacksOf)) },
	sandwich: { label: 'Sandwich', make: (root) => withEmpty(root, (box) => new SandwichView(box, stacksOf)) },
	diff: { label: 'Diff', make: (root) => new DiffView(root) },
	heatmap: { label: 'Heat map' },
};

const PRESETS = ['-15m', '-1h', '-6h', '-24h', '-7d'];
const EVENTS = ['cpu-clock', 'task-clock', 'off-cpu', 'cycles', 'instructions', 'cache-misses', 'page-faults'];

// The stacks of a selection (/api/v1/stacks?format=json), fetched once
// and shared by the flame, icicle, top and sandwich views; null when the
// selection has no samples.
let cached = { key: null, data: null };
async function stacksOf(signal) {
	const q = state.selection();
	const key = q.toString();
	if (cached.key !== key) {
		const j = await api.stacksJSON(q, signal);
		cached = { key, data: j && j.stacks.length ? new Data(j, false) : null };
	}
	return cached.data;
}

export const EMPTY = 'No samples in this selection and time range. Widen the range, pick another target or event, or check that the agents sample (sampling.enabled) and push to this exporter.';

// Wrap a view so that an empty selection says why instead of drawing nothing.
function withEmpty(root, make) {
	const msg = el('p', { class: 'empty', hidden: true }), box = el('div');
	fill(root, msg, box);
	const v = make(box);
	return {
		async load(signal) {
			const n = await v.load(signal);
			msg.hidden = n !== null;
			box.hidden = n === null;
			if (n === null) msg.textContent = EMPTY;
			return n || 0;
		},
		sync: () => v.sync?.(),
		destroy: () => v.destroy?.(),
	};
}

function profileView(root, inverted) {
	const chips = el('div'), box = el('div', { class: 'flame-view' }), none = el('p', { class: 'empty', hidden: true });
	fill(root, el('div', { class: 'flame-top' }, chips, legend()), none, box);
	const v = new FlameView(box, { inverted });
	let data = null;
	const sync = () => {
		fill(chips, transformChips());
		if (!data) return undefined;
		const t = data.tree(state.get('focus'), state.get('hide'));
		none.hidden = !!t.total;
		box.hidden = !t.total;
		none.textContent = t.total ? '' : 'No stack is left: no stack of this selection goes through the focused function (or every frame is hidden). Remove the focus or hide chip above.';
		if (t.total) v.setTree(t);
		return t.total;
	};
	return {
		async load(signal) {
			data = await stacksOf(signal);
			if (!data) return null;
			sync();
			return data.tree(state.get('focus'), state.get('hide')).total;
		},
		sync,
		destroy: () => v.destroy(),
	};
}

function status(text, kind = '') {
	const s = $('status');
	s.className = 'status ' + kind;
	s.textContent = text;
}

// ---- toolbar ----

function toolbar() {
	const evInput = el('input', { id: 'event', list: 'events', placeholder: 'all events', spellcheck: 'false', autocomplete: 'off', size: 12 });
	const evList = el('datalist', { id: 'events' }, ...EVENTS.map((e) => el('option', { value: e })));
	evInput.addEventListener('change', () => state.set({ event: evInput.value.trim() }));
	const presets = el('div', { class: 'presets', role: 'group', 'aria-label': 'time range' }, ...PRESETS.map((p) => el('button', {
		type: 'button', 'data-from': p, text: p.slice(1), title: `the last ${p.slice(1)}`,
		onclick: () => state.set({ from: p === '-1h' ? '' : p, to: '' }),
	})));
	const fromIn = el('input', { type: 'datetime-local', id: 'from', step: 1, title: 'from (local time)' });
	const toIn = el('input', { type: 'datetime-local', id: 'to', step: 1, title: 'to (local time)' });
	const apply = el('button', {
		type: 'button', text: 'Apply', onclick: () => {
			const f = fromIn.value && Date.parse(fromIn.value) / 1000, t = toIn.value && Date.parse(toIn.value) / 1000;
			if (f && t && f >= t) return status('"from" must be before "to"', 'error');
			state.set({ from: f ? String(Math.floor(f)) : '', to: t ? String(Math.ceil(t)) : '' });
		},
	});
	const tabs = el('div', { class: 'views', role: 'tablist' }, ...Object.entries(VIEWS).filter(([, v]) => v.make).map(([k, v]) => el('button', {
		type: 'button', role: 'tab', 'data-view': k, text: v.label, onclick: () => state.set({ view: k === 'flame' ? '' : k }),
	})));
	fill($('toolbar'), tabs, el('label', { class: 'ev' }, 'event ', evInput, evList), presets,
		el('div', { class: 'abs' }, fromIn, el('span', { text: '→' }), toIn, apply));
	return { evInput, presets, fromIn, toIn, tabs };
}

function localInput(v) {
	if (!v || !/^\d+(\.\d+)?$/.test(v)) return '';
	const d = new Date(Number(v) * 1000);
	return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}

function syncToolbar(tb) {
	if (document.activeElement !== tb.evInput) tb.evInput.value = state.get('event') || '';
	const from = state.get('from') || '-1h', to = state.get('to');
	for (const b of tb.presets.children) b.classList.toggle('on', !to && b.dataset.from === from);
	tb.fromIn.value = localInput(state.get('from'));
	tb.toIn.value = localInput(state.get('to'));
	for (const b of tb.tabs.children) b.setAttribute('aria-selected', String(b.dataset.view === state.view()));
}

function syncHeader() {
	const parts = [];
	for (const k of ['host', 'container', 'pod', 'cgroup', 'event']) {
		const v = state.get(k);
		if (v) parts.push(el('span', { class: 'chip' }, el('b', { text: k }), ' ', v));
	}
	if (!parts.length) parts.push(el('span', { class: 'chip' }, 'all hosts'));
	parts.push(el('span', { class: 'range', text: `${when(state.get('from'), '-1h')} → ${when(state.get('to'), 'now')}` }));
	fill($('selection'), ...parts);
	const q = state.selection();
	for (const f of ['folded', 'pprof', 'svg']) $('export-' + f).href = api.stacksURL(q, f);
	const diff = state.view() === 'diff' && hasBase();
	$('export-diff-svg').hidden = $('export-diff-folded').hidden = !diff;
	if (diff) {
		const dq = diffQuery();
		if (state.get('normalize') === '0') dq.set('normalize', '0');
		$('export-diff-svg').href = api.diffURL(dq, 'svg');
		$('export-diff-folded').href = api.diffURL(dq, 'folded');
	}
	const base = state.BASE.filter((k) => state.get(k)).map((k) => `${k.slice(5)}=${state.get(k)}`);
	$('base').hidden = !base.length;
	$('base').textContent = base.length ? 'base: ' + base.join(' ') : '';
	document.title = `cgperf · ${state.view()} · ${state.get('container') || state.get('pod') || state.get('cgroup') || state.get('host') || 'all hosts'}`;
}

// ---- the view ----

let current = { name: null, view: null, abort: null };

async function showView(reload) {
	const name = state.view();
	const spec = VIEWS[name];
	if (current.name !== name) {
		current.abort?.abort();
		current.view?.destroy?.();
		current = { name, view: null, abort: null };
		if (!spec.make) {
			fill($('view'), el('p', { class: 'empty', text: `The ${spec.label.toLowerCase()} view is not built yet; the flame graph, icicle, top table, sandwich, diff and series are.` }));
			status('');
			return;
		}
		current.view = spec.make($('view'));
		reload = true;
	}
	if (!current.view) return;
	if (!reload) {
		// focus, hide and the like change what the view counts: say so
		const n = current.view.sync?.();
		if (typeof n === 'number' && !$('status').classList.contains('error')) status(`${count(n)} samples`, 'ok');
		return;
	}
	current.abort?.abort();
	const ac = new AbortController();
	current.abort = ac;
	// Progress: after 150 ms, "Loading…" with a spinner and the seconds waited.
	let busyTimer;
	const busy = setTimeout(() => {
		status('Loading…', 'busy');
		busyTimer = setInterval(() => status(`Loading… ${((performance.now() - t0) / 1000).toFixed(0)} s`, 'busy'), 1000);
	}, 150);
	const t0 = performance.now();
	try {
		const n = await current.view.load(ac.signal);
		if (ac.signal.aborted) return;
		const ms = `${(performance.now() - t0).toFixed(0)} ms`;
		status(name === 'series' ? `${n} series · ${ms}` : n === null ? '' : `${count(n)} samples · ${ms}`, 'ok');
	} catch (e) {
		if (e.name === 'AbortError') return;
		status(e.message, 'error');
	} finally {
		clearTimeout(busy);
		clearInterval(busyTimer);
	}
}

function main() {
	const tb = toolbar();
	const picker = new Picker($('picker'));
	picker.load();
	syncToolbar(tb);
	syncHeader();
	showView(true);
	state.subscribe((changed) => {
		syncToolbar(tb);
		syncHeader();
		picker.paint();
		const sel = [...state.SELECTION, ...(state.view() === 'diff' ? state.BASE : []), 'metric', 'top', 'step'].some((k) => changed.has(k));
		showView(sel);
	});
	window.cgperf = { state, time }; // for people poking at the console
}

main();
