// SPDX-License-Identifier: MIT
// The top table: per function, self samples (stacks ending in it) and
// total samples (stacks holding it, once each), their shares and CPU
// time, after the page's focus and hide. Sortable by any column (URL key
// sort: name, self or total, ':asc' to reverse), filtered by the search
// regular expression; choosing a row opens its sandwich view. Only the
// first ROWS rows are put in the document: a profile has tens of
// thousands of functions, and the filter narrows them.
import { el, fill } from './dom.js';
import { count, dur, pct } from './fmt.js';
import { colour, transformChips } from './flame.js';
import * as state from './state.js';

const ROWS = 400;
const COLS = [
	['name', 'Function', 'text'],
	['self', 'Self', 'n'], ['selfShare', 'Self %', 'n'], ['selfCpu', 'Self CPU', 'n'],
	['total', 'Total', 'n'], ['totalShare', 'Total %', 'n'], ['totalCpu', 'Total CPU', 'n'],
];
const SORTS = { name: 'name', self: 'self', selfShare: 'self', selfCpu: 'self', total: 'total', totalShare: 'total', totalCpu: 'total' };

export class TopView {
	constructor(root, loadData) {
		this.loadData = loadData;
		this.input = el('input', {
			type: 'search', id: 'search', placeholder: 'Filter functions (regular expression)  /', spellcheck: 'false', autocomplete: 'off',
			oninput: () => {
				clearTimeout(this.timer);
				this.timer = setTimeout(() => state.set({ search: this.input.value }, { replace: true }), 150);
			},
		});
		this.note = el('span', { class: 'info' });
		this.chips = el('div');
		this.head = el('tr');
		this.body = el('tbody');
		this.table = el('table', { class: 'top-table', id: 'top-table' }, el('thead', null, this.head), this.body);
		fill(root, el('div', { class: 'flame-bar' }, this.chips, el('div', { class: 'search' }, this.input), this.note),
			el('div', { class: 'table-wrap' }, this.table));
		this.onKey = (e) => {
			if (e.key === '/' && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement?.tagName)) {
				e.preventDefault();
				this.input.focus();
			}
		};
		addEventListener('keydown', this.onKey);
	}

	destroy() {
		removeEventListener('keydown', this.onKey);
	}

	async load(signal) {
		this.data = await this.loadData(signal);
		if (!this.data) return null;
		this.sync();
		return this.data.functions(state.get('focus'), state.get('hide')).all;
	}

	sync() {
		if (!this.data) return undefined;
		fill(this.chips, transformChips());
		const s = state.get('search') || '';
		if (document.activeElement !== this.input) this.input.value = s;
		let re = null;
		this.input.classList.remove('bad');
		if (s) {
			try {
				re = new RegExp(s);
			} catch {
				this.input.classList.add('bad');
			}
		}
		const { all, rows } = this.data.functions(state.get('focus'), state.get('hide'));
		const [key, dir] = (state.get('sort') || 'total').split(':');
		const k = SORTS[key] || 'total', asc = dir === 'asc';
		let list = re ? rows.filter((r) => re.test(r.name)) : rows.slice();
		if (k === 'name') list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) * (asc ? 1 : -1));
		else list.sort((a, b) => (asc ? a[k] - b[k] : b[k] - a[k]) || b.total - a.total);
		const ns = this.data.nsPerSample, u = this.data.unit;
		fill(this.head, ...COLS.filter(([c]) => ns || !/Cpu$/.test(c)).map(([c, label, type]) => {
			const f = SORTS[c], on = c === k;
			const next = on ? f + (asc ? '' : ':asc') : f + (f === 'name' ? ':asc' : '');
			return el('th', {
				class: type + (on ? ' sorted ' + (asc ? 'asc' : 'desc') : ''), 'data-col': c, 'aria-sort': on ? (asc ? 'ascending' : 'descending') : 'none',
				title: `sort by ${label.toLowerCase()}`,
				onclick: () => state.set({ sort: next === 'total' ? '' : next }),
			}, label);
		}));
		const shown = list.slice(0, ROWS);
		fill(this.body, ...shown.map((r) => {
			const sw = el('span', { class: 'sw' });
			sw.style.background = colour(r.name, r.kind);
			const cells = [
				el('td', { class: 'fn', title: `${r.name}\n${r.kind}` }, sw, el('span', { class: 'name', text: r.name })),
				el('td', { class: 'n', text: count(r.self) }), el('td', { class: 'n share', 'data-share': String(r.self / all) }, bar(r.self / all, 'self')),
				ns ? el('td', { class: 'n', text: dur(r.self * ns) }) : null,
				el('td', { class: 'n', text: count(r.total) }), el('td', { class: 'n share', 'data-share': String(r.total / all) }, bar(r.total / all, 'total')),
				ns ? el('td', { class: 'n', text: dur(r.total * ns) }) : null,
			];
			return el('tr', { tabindex: '0', title: `${u}: open the sandwich view of this function`, onclick: () => this.open(r.name), onkeydown: (e) => e.key === 'Enter' && this.open(r.name) }, ...cells);
		}));
		if (!shown.length) fill(this.body, el('tr', null, el('td', { colspan: '7', class: 'empty', text: rows.length ? 'No function matches the filter.' : 'No functions.' })));
		this.note.textContent = `${count(list.length)} of ${count(rows.length)} functions` + (list.length > ROWS ? ` (first ${ROWS} shown: filter to narrow)` : '') + ` · ${count(all)} ${u}`;
		return all;
	}

	open(name) {
		state.set({ view: 'sandwich', fn: name, zoom: '' });
	}
}

function bar(x, cls) {
	const b = el('span', { class: 'bar ' + cls });
	b.style.width = Math.max(0, Math.min(100, x * 100)).toFixed(1) + '%';
	return el('div', { class: 'cell' }, b, el('span', { class: 'v', text: pct(x) }));
}
