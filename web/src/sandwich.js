// SPDX-License-Identifier: MIT
// The sandwich view of one function (URL key fn): above, its callers as a
// flame graph growing upward from it (who calls it, and through whom);
// below, its callees as an icicle hanging from it (what it spends its
// time in). Both count the stacks through the function once (from its
// outermost frame), after the page's focus and hide, and keep the flame
// graph's interactions (zoom, search, tooltips, right-click).
import { el, fill } from './dom.js';
import { count, dur, pct } from './fmt.js';
import { FlameView, legend, transformChips } from './flame.js';
import * as state from './state.js';

export class SandwichView {
	constructor(root, loadData) {
		this.loadData = loadData;
		this.fnInput = el('input', {
			type: 'search', id: 'fn', list: 'fn-list', placeholder: 'function', spellcheck: 'false', autocomplete: 'off',
			onchange: () => state.set({ fn: this.fnInput.value, zoom: '' }),
		});
		this.fnList = el('datalist', { id: 'fn-list' });
		this.summary = el('span', { class: 'info', id: 'sandwich-summary' });
		this.chips = el('div');
		this.msg = el('p', { class: 'empty', hidden: true });
		const up = el('div', { class: 'flame-view callers' }), down = el('div', { class: 'flame-view callees' });
		this.body = el('div', { class: 'sandwich' }, up, down);
		fill(root, el('div', { class: 'flame-bar' }, el('label', { class: 'ev' }, 'function ', this.fnInput, this.fnList), this.chips, this.summary, legend()), this.msg, this.body);
		this.callers = new FlameView(up, { id: 'flame-callers', inverted: false, search: false, zoomKey: null, title: 'Callers (the function at the bottom, its callers above)' });
		this.callees = new FlameView(down, { id: 'flame-callees', inverted: true, search: false, zoomKey: null, title: 'Callees (the function on top, what it calls below)' });
	}

	destroy() {
		this.callers.destroy();
		this.callees.destroy();
	}

	async load(signal) {
		this.data = await this.loadData(signal);
		if (!this.data) return null;
		const { rows } = this.data.functions(state.get('focus'), state.get('hide'));
		fill(this.fnList, ...rows.slice(0, 200).map((r) => el('option', { value: r.name })));
		this.fn = undefined;
		this.sync();
		return this.data.tree(state.get('focus'), state.get('hide')).total;
	}

	sync() {
		if (!this.data) return undefined;
		fill(this.chips, transformChips());
		const fn = state.get('fn');
		if (document.activeElement !== this.fnInput) this.fnInput.value = fn || '';
		const { callers, callees } = this.data.sandwich(fn || '', state.get('focus'), state.get('hide'));
		const all = this.data.tree(state.get('focus'), state.get('hide')).total;
		this.body.hidden = !callers.total;
		this.msg.hidden = !!callers.total;
		if (!callers.total) {
			this.msg.textContent = !fn ? 'Choose a function: type its name above, pick a row of the top table, or right-click a frame of the flame graph.'
				: this.data.id(fn) < 0 ? 'This function is not in the selection\'s stacks (check the name, the range and the target).'
					: 'No stack through this function is left after the focus and hide filters.';
			this.summary.textContent = '';
			return all;
		}
		const ns = this.data.nsPerSample, self = callees.root.children.values().next().value.self;
		this.summary.textContent = `total ${count(callers.total)} (${pct(callers.total / all)})` + (ns ? ` ${dur(callers.total * ns)}` : '') +
			` · self ${count(self)} (${pct(self / all)}) · ${count(callers.root.children.values().next().value.children.size)} direct callers`;
		if (this.fn !== fn) {
			this.fn = fn;
			this.callers.localZoom = '';
			this.callees.localZoom = '';
		}
		this.callers.setTree(callers);
		this.callees.setTree(callees);
		return all;
	}
}
