// SPDX-License-Identifier: MIT
// The selection: hosts, containers, pods, systemd units and raw cgroups
// from /api/v1/targets, searchable. The list draws only the rows in view
// (a fixed row height and a spacer), so thousands of cgroups stay fluid.
import * as api from './api.js';
import { el, fill } from './dom.js';
import * as state from './state.js';

const ROW = 44;
const TABS = [
	['hosts', 'Hosts'],
	['containers', 'Containers'],
	['pods', 'Pods'],
	['units', 'Units'],
	['cgroups', 'Cgroups'],
];

// Entries of each tab: {title, sub, params} where params is what choosing
// it sets (the other selection keys are cleared).
export function entries(t) {
	const out = { hosts: [], containers: [], pods: [], units: [], cgroups: [] };
	const hosts = new Set([...t.agents.map((a) => a.host), ...t.cgroups.map((c) => c.host)]);
	for (const h of [...hosts].sort()) out.hosts.push({ title: h, sub: `${t.cgroups.filter((c) => c.host === h).length} cgroups`, params: { host: h } });
	const pods = new Map();
	for (const c of t.cgroups) {
		if (c.container_id) {
			out.containers.push({
				title: c.container_name || c.container_id.slice(0, 12),
				sub: [c.host, c.image, c.runtime].filter(Boolean).join(' · '),
				params: { host: c.host, container: c.container_id },
			});
		}
		if (c.pod_uid || c.pod_name) {
			const key = c.host + '\n' + (c.pod_uid || c.pod_name);
			if (!pods.has(key)) pods.set(key, {
				title: c.pod_name ? `${c.namespace ? c.namespace + '/' : ''}${c.pod_name}` : c.pod_uid,
				sub: [c.host, c.qos].filter(Boolean).join(' · '),
				params: { host: c.host, pod: c.pod_uid || c.pod_name },
			});
		}
		if (c.unit) out.units.push({ title: c.unit, sub: `${c.host} · ${c.path}`, params: { host: c.host, cgroup: c.path } });
		out.cgroups.push({ title: c.path, sub: c.host, params: { host: c.host, cgroup: c.path } });
	}
	out.pods = [...pods.values()];
	const by = (a, b) => (a.title < b.title ? -1 : a.title > b.title ? 1 : 0);
	for (const k of Object.keys(out)) if (k !== 'hosts') out[k].sort(by);
	return out;
}

export class Picker {
	constructor(root) {
		this.root = root;
		this.tab = 'hosts';
		this.all = null;
		this.items = [];
		this.tabs = el('div', { class: 'tabs', role: 'tablist' }, ...TABS.map(([k, t]) => el('button', {
			type: 'button', role: 'tab', 'data-tab': k, onclick: () => this.setTab(k),
		}, t, el('span', { class: 'n' }))));
		this.search = el('input', { type: 'search', id: 'target-search', placeholder: 'Filter…', spellcheck: 'false', autocomplete: 'off', oninput: () => this.filter() });
		this.spacer = el('div', { class: 'spacer' });
		this.rowsBox = el('div', { class: 'rows' });
		this.list = el('div', { class: 'list', id: 'target-list', onscroll: () => this.paint() }, this.spacer, this.rowsBox);
		this.count = el('div', { class: 'count' });
		this.allBtn = el('button', { type: 'button', class: 'all', onclick: () => this.choose({}) }, 'Everything (all hosts)');
		this.baseBtn = el('button', {
			type: 'button', class: 'set-base', id: 'set-base', title: 'compare against this selection: it becomes the diff\'s base; then pick the target',
			onclick: () => {
				const patch = {};
				for (const k of state.SELECTION) patch['base_' + k] = state.get(k);
				state.set(patch);
			},
		}, 'Set as base');
		fill(root, el('div', { class: 'picker-head' }, el('h2', { text: 'Targets' }), this.baseBtn), this.allBtn, this.tabs, this.search, this.list, this.count);
		this.ro = new ResizeObserver(() => this.paint());
		this.ro.observe(this.list);
	}

	async load(signal) {
		try {
			this.all = entries(await api.targets(signal));
		} catch (e) {
			if (e.name === 'AbortError') return;
			fill(this.rowsBox, el('p', { class: 'error', text: `targets: ${e.message}` }));
			return;
		}
		for (const b of this.tabs.children) b.querySelector('.n').textContent = String(this.all[b.dataset.tab].length);
		// Open the tab of what is selected.
		if (state.get('container')) this.tab = 'containers';
		else if (state.get('pod')) this.tab = 'pods';
		else if (state.get('cgroup')) this.tab = this.all.units.some((u) => u.params.cgroup === state.get('cgroup')) ? 'units' : 'cgroups';
		this.setTab(this.tab);
	}

	setTab(k) {
		this.tab = k;
		for (const b of this.tabs.children) b.setAttribute('aria-selected', String(b.dataset.tab === k));
		this.filter();
	}

	filter() {
		const f = this.search.value.trim().toLowerCase();
		const src = this.all ? this.all[this.tab] : [];
		this.items = f ? src.filter((e) => e.title.toLowerCase().includes(f) || e.sub.toLowerCase().includes(f)) : src;
		this.count.textContent = `${this.items.length} of ${src.length}`;
		this.spacer.style.height = this.items.length * ROW + 'px';
		this.list.scrollTop = 0;
		this.paint();
	}

	selected(e) {
		return state.SELECTION.slice(0, 4).every((k) => (e.params[k] || undefined) === state.get(k));
	}

	paint() {
		const top = this.list.scrollTop, h = this.list.clientHeight || 400;
		const first = Math.max(0, Math.floor(top / ROW) - 5), last = Math.min(this.items.length, Math.ceil((top + h) / ROW) + 5);
		const rows = [];
		for (let i = first; i < last; i++) {
			const e = this.items[i];
			const r = el('div', { class: 'row' + (this.selected(e) ? ' on' : ''), role: 'button', tabindex: '0', title: e.title, onclick: () => this.choose(e.params) },
				el('div', { class: 't', text: e.title }), el('div', { class: 's', text: e.sub }));
			r.style.top = i * ROW + 'px';
			rows.push(r);
		}
		fill(this.rowsBox, ...rows);
		if (!this.items.length && this.all) fill(this.rowsBox, el('p', { class: 'empty', text: this.search.value ? 'Nothing matches the filter.' : 'None seen: no agent pushed any within the series expiry.' }));
		this.allBtn.classList.toggle('on', !['host', 'cgroup', 'container', 'pod'].some((k) => state.get(k)));
		// A base needs something to differ by: a target, an event or a range.
		this.baseBtn.disabled = !state.SELECTION.some((k) => state.get(k));
	}

	choose(params) {
		state.set({ host: params.host, cgroup: params.cgroup, container: params.container, pod: params.pod, zoom: '' });
	}
}
