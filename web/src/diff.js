// SPDX-License-Identifier: MIT
// The diff view: the selection (target) against a base selection (URL keys
// base_host, base_cgroup, base_container, base_pod, base_event, base_from,
// base_to), from /api/v1/diff?format=json. A frame's width is the mean of
// its shares of both sides (normalize, the default) or the sum of its
// samples (normalize=0), so frames of either side alone are drawn: those
// only in the target hatched yellow, those only in the base hatched
// teal (the server's SVG cannot draw these). Others are red when they
// grew, blue when they shrank, the deeper the larger the change against
// the largest one. Below, a table of the largest changes per function.
import * as api from './api.js';
import { el, fill } from './dom.js';
import { count, pct } from './fmt.js';
import { FlameView, transformChips } from './flame.js';
import { Data } from './profile.js';
import * as state from './state.js';

const ROWS = 200;
const ONLY_TARGET = '#f2c94c', ONLY_BASE = '#4fb3a9';

// Keys of the base side, as the toolbar edits them.
const BASE_FIELDS = [['base_host', 'host'], ['base_cgroup', 'cgroup'], ['base_container', 'container'], ['base_pod', 'pod'], ['base_from', 'from'], ['base_to', 'to']];

export function hasBase() {
	return state.BASE.some((k) => state.get(k) !== undefined);
}

// The diff query: the target selection and the base_* keys.
export function diffQuery() {
	const q = state.selection();
	for (const k of state.BASE) if (state.get(k) !== undefined) q.set(k, state.get(k));
	return q;
}

function hatch(g, colour, flip) {
	const c = document.createElement('canvas');
	c.width = c.height = 8;
	const h = c.getContext('2d');
	h.fillStyle = colour;
	h.fillRect(0, 0, 8, 8);
	h.strokeStyle = 'rgba(0,0,0,.35)';
	h.lineWidth = 1.5;
	h.beginPath();
	if (flip) { h.moveTo(0, 0); h.lineTo(8, 8); h.moveTo(-4, 4); h.lineTo(4, 12); h.moveTo(4, -4); h.lineTo(12, 4); }
	else { h.moveTo(0, 8); h.lineTo(8, 0); h.moveTo(-4, 4); h.lineTo(4, -4); h.moveTo(4, 12); h.lineTo(12, 4); }
	h.stroke();
	return g.createPattern(c, 'repeat');
}

// A node's change: share points (normalised) or samples.
function delta(t, n, norm) {
	return norm ? (t.targetTotal ? n.target / t.targetTotal : 0) - (t.baseTotal ? n.base / t.baseTotal : 0) : n.target - n.base;
}

export function side(base, target) {
	return !base && target ? 'only in the target' : base && !target ? 'only in the base' : '';
}

export class DiffView {
	constructor(root) {
		this.fields = BASE_FIELDS.map(([k, label]) => {
			const i = el('input', { id: k, placeholder: label, spellcheck: 'false', autocomplete: 'off', size: label === 'from' || label === 'to' ? 8 : 14, title: `the base's ${label} (${k})` });
			i.addEventListener('change', () => state.set({ [k]: i.value.trim() }));
			return i;
		});
		this.norm = el('input', { type: 'checkbox', id: 'normalize', onchange: () => state.set({ normalize: this.norm.checked ? '' : '0' }) });
		this.links = el('span', { class: 'export' });
		this.chips = el('div');
		this.msg = el('p', { class: 'empty', hidden: true });
		this.graphBox = el('div', { class: 'flame-view' });
		this.tableNote = el('p', { class: 'info' });
		this.body = el('tbody');
		this.tableBox = el('div', { class: 'diff-changes' }, el('h3', { class: 'graph-title', text: 'Largest changes' }), this.tableNote,
			el('div', { class: 'table-wrap' }, el('table', { class: 'top-table', id: 'diff-table' },
				el('thead', null, el('tr', null, ...['Function', 'Base', 'Target', 'Change', 'Side'].map((t, i) => el('th', { class: i ? 'n' : 'text', text: t })))), this.body)));
		this.content = el('div', null, this.graphBox, this.tableBox);
		fill(root,
			el('div', { class: 'diff-bar' },
				el('span', { class: 'lbl', text: 'Base' }), ...this.fields,
				el('button', { type: 'button', text: 'Swap', title: 'swap base and target', onclick: () => this.swap() }),
				el('label', { class: 'ev' }, this.norm, ' normalise shares'), this.chips),
			el('div', { class: 'legend' }, ...[['#d94040', 'grew'], ['#3b6fd4', 'shrank'], ['#e4e4e4', 'unchanged'], [ONLY_TARGET, 'only in the target'], [ONLY_BASE, 'only in the base']].map(([c, t]) => {
				const sw = el('span', { class: 'sw' + (/only/.test(t) ? ' hatched' : '') });
				sw.style.background = c;
				return el('span', { class: 'key' }, sw, t);
			})),
			this.msg, this.content);
		this.view = new FlameView(this.graphBox, {
			id: 'flame', menu: true,
			colour: (g, t, n) => this.colour(g, t, n),
			tip: (t, n) => this.tip(t, n),
		});
	}

	destroy() {
		this.view.destroy();
	}

	swap() {
		const patch = {};
		for (const k of state.SELECTION) {
			patch[k] = state.get('base_' + k) ?? state.get(k);
			patch['base_' + k] = state.get(k) ?? state.get('base_' + k);
		}
		state.set(patch);
	}

	async load(signal) {
		this.syncBar();
		this.data = null;
		if (!hasBase()) {
			this.content.hidden = true;
			this.msg.hidden = false;
			this.msg.textContent = 'Choose a base to compare with: click "Set as base" in the targets list, then pick the target; or type the base\'s host, cgroup, container, pod or range (from/to) above.';
			return null;
		}
		const j = await api.diffJSON(diffQuery(), signal);
		this.content.hidden = !j;
		this.msg.hidden = !!j;
		if (!j) {
			this.msg.textContent = 'No samples on either side: neither the target nor the base selection has stacks in its range.';
			return 0;
		}
		this.data = new Data(j, true);
		this.sync();
		return this.data.samples;
	}

	syncBar() {
		BASE_FIELDS.forEach(([k], i) => {
			if (document.activeElement !== this.fields[i]) this.fields[i].value = state.get(k) || '';
		});
		this.norm.checked = state.get('normalize') !== '0';
		fill(this.chips, transformChips());
	}

	sync() {
		this.syncBar();
		if (!this.data) return undefined;
		const norm = state.get('normalize') !== '0', f = state.get('focus'), h = state.get('hide');
		const t = this.data.diffTree(norm, f, h);
		this.norm0 = norm;
		this.max = this.data.memo(`max\n${norm}\n${f ?? ''}\n${h ?? ''}`, () => {
			let m = 0;
			const walk = (n) => {
				for (const c of n.children.values()) {
					m = Math.max(m, Math.abs(delta(t, c, norm)));
					walk(c);
				}
			};
			walk(t.root);
			return m || 1;
		});
		this.view.setTree(t);
		this.view.info.textContent = `base ${count(t.baseTotal)} · target ${count(t.targetTotal)} ${this.data.unit} · ${count(t.stacks)} stacks`;
		this.view.canvas.dataset.base = String(t.baseTotal);
		this.view.canvas.dataset.target = String(t.targetTotal);
		this.table(t, norm);
		return t.targetTotal;
	}

	colour(g, t, n) {
		if (!n.parent) return '#e9ecf0';
		if (!n.base) return (this.pt ||= new Map()).get(g) || this.pt.set(g, hatch(g, ONLY_TARGET, false)).get(g);
		if (!n.target) return (this.pb ||= new Map()).get(g) || this.pb.set(g, hatch(g, ONLY_BASE, true)).get(g);
		const d = delta(t, n, this.norm0), x = Math.min(1, Math.abs(d) / this.max);
		if (x < 0.02) return '#e4e4e4';
		return d > 0 ? `hsl(0 ${(55 + 25 * x).toFixed(0)}% ${(90 - 40 * x).toFixed(0)}%)` : `hsl(220 ${(55 + 25 * x).toFixed(0)}% ${(90 - 40 * x).toFixed(0)}%)`;
	}

	tip(t, n) {
		const B = t.baseTotal, T = t.targetTotal, u = this.data.unit;
		const d = delta(t, n, this.norm0);
		return [n.parent ? n.name : 'all',
			`target: ${count(n.target)} ${u} (${pct(T ? n.target / T : 0)})`,
			`base: ${count(n.base)} ${u} (${pct(B ? n.base / B : 0)})`,
			side(n.base, n.target) || (this.norm0 ? `change: ${d >= 0 ? '+' : ''}${(d * 100).toFixed(2)} points` : `change: ${d >= 0 ? '+' : ''}${count(d)} ${u}`),
			`${t.kind(n)} · depth ${n.depth}`];
	}

	table(t, norm) {
		const { B, T, rows } = this.data.diffFunctions(state.get('focus'), state.get('hide'));
		let re = null;
		try {
			re = state.get('search') ? new RegExp(state.get('search')) : null;
		} catch { /* the search box says so */ }
		const d = (r) => (norm ? (T ? r.target / T : 0) - (B ? r.base / B : 0) : r.target - r.base);
		const list = (re ? rows.filter((r) => re.test(r.name)) : rows.slice()).sort((a, b) => Math.abs(d(b)) - Math.abs(d(a)) || (a.name < b.name ? -1 : 1));
		const u = this.data.unit;
		fill(this.body, ...list.slice(0, ROWS).map((r) => {
			const x = d(r), only = side(r.base, r.target);
			return el('tr', { class: only ? (r.base ? 'only-base' : 'only-target') : x > 0 ? 'grew' : x < 0 ? 'shrank' : '', title: 'open the sandwich view of this function', onclick: () => state.set({ view: 'sandwich', fn: r.name, zoom: '' }) },
				el('td', { class: 'fn' }, el('span', { class: 'name', text: r.name })),
				el('td', { class: 'n', text: `${count(r.base)} (${pct(B ? r.base / B : 0)})` }),
				el('td', { class: 'n', text: `${count(r.target)} (${pct(T ? r.target / T : 0)})` }),
				el('td', { class: 'n change', text: norm ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)} pts` : `${x >= 0 ? '+' : ''}${count(x)} ${u}` }),
				el('td', { class: 'side', text: only }));
		}));
		this.tableNote.textContent = `${count(list.length)} functions` + (list.length > ROWS ? `, the ${ROWS} largest changes shown` : '') + (re ? ' matching the search' : '') +
			(norm ? ': change in points of each side\'s share' : `: change in ${u}`) + ' · click a row for its sandwich';
	}
}
