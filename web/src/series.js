// SPDX-License-Identifier: MIT
// The series view: per-cgroup counters over time from /api/v1/series
// (CPU cores by default, the top N cgroups of the selection), drawn by
// uPlot. Dragging across the plot sets the page's from/to, so the flame
// graph then covers those minutes.
import uPlot from './uPlot.esm.js';
import * as api from './api.js';
import { el, fill } from './dom.js';
import { si, toSeconds } from './fmt.js';
import * as state from './state.js';

const COLOURS = ['#3b6fd4', '#e0662b', '#2f9e57', '#c23b8e', '#8a63d2', '#c9a227', '#1d9bb0', '#d94040', '#6b7a8f', '#7fae34'];

export const METRICS = [
	['cpu', 'CPU cores'],
	['context-switches', 'context switches/s'],
	['cpu-migrations', 'CPU migrations/s'],
	['page-faults', 'page faults/s'],
	['cycles', 'cycles/s'],
	['instructions', 'instructions/s'],
	['task-clock', 'task-clock ns/s'],
];

// A series' name from its labels: the container, pod or unit when known,
// else the cgroup path; the host first when the selection spans hosts.
export function seriesName(m, withHost) {
	const who = m.container_name || (m.pod_name && `${m.namespace ? m.namespace + '/' : ''}${m.pod_name}`) || m.unit || m.id || '?';
	return withHost && m.host ? `${m.host}: ${who}` : who;
}

export class SeriesView {
	constructor(root) {
		this.root = root;
		this.metric = el('select', { id: 'metric', onchange: () => state.set({ metric: this.metric.value === 'cpu' ? '' : this.metric.value }) },
			...METRICS.map(([v, t]) => el('option', { value: v, text: t })));
		this.top = el('select', { id: 'top', onchange: () => state.set({ top: this.top.value === '10' ? '' : this.top.value }) },
			...[5, 10, 20, 50].map((n) => el('option', { value: String(n), text: `top ${n}` })));
		this.plotBox = el('div', { class: 'plot', id: 'series-plot' });
		this.note = el('p', { class: 'hint', text: 'Drag across the plot to choose the time range of the profile.' });
		fill(root, el('div', { class: 'series-bar' }, this.metric, this.top, this.note), this.plotBox);
		this.ro = new ResizeObserver(() => this.resize());
		this.ro.observe(this.plotBox);
	}

	destroy() {
		this.ro.disconnect();
		this.plot?.destroy();
	}

	async load(signal) {
		this.metric.value = state.get('metric') || 'cpu';
		this.top.value = state.get('top') || '10';
		const q = state.selection();
		q.delete('event');
		q.set('event', this.metric.value);
		q.set('top', this.top.value);
		if (state.get('step')) q.set('step', state.get('step'));
		const result = await api.series(q, signal);
		this.render(result);
		return result.length;
	}

	render(result) {
		this.plot?.destroy();
		this.plot = null;
		if (!result.length) {
			fill(this.plotBox, el('p', { class: 'empty', text: 'No counters in this selection and time range: no agent pushed for it, or the range is before the retention.' }));
			return;
		}
		const hosts = new Set(result.map((r) => r.metric.host));
		const xs = [...new Set(result.flatMap((r) => r.values.map((v) => v[0])))].sort((a, b) => a - b);
		const at = new Map(xs.map((x, i) => [x, i]));
		const data = [xs];
		for (const r of result) {
			const ys = new Array(xs.length).fill(null);
			for (const [t, v] of r.values) ys[at.get(t)] = Number(v);
			data.push(ys);
		}
		// The x axis spans the asked range, however few points fall in it.
		const now = Date.now() / 1000;
		const x0 = toSeconds(state.get('from') || '-1h', now), x1 = toSeconds(state.get('to'), now);
		const label = METRICS.find(([v]) => v === this.metric.value)?.[1] || this.metric.value;
		const opts = {
			width: Math.max(300, this.plotBox.clientWidth),
			height: 360,
			cursor: { drag: { x: true, y: false, setScale: false } },
			select: { show: true },
			scales: { x: { time: true, range: (u, lo, hi) => (x0 < x1 ? [x0, x1] : [lo, hi]) } },
			axes: [{}, { label, size: 60, values: (u, v) => v.map(si) }],
			series: [{}, ...result.map((r, i) => ({
				label: seriesName(r.metric, hosts.size > 1),
				stroke: COLOURS[i % COLOURS.length],
				fill: COLOURS[i % COLOURS.length] + '22',
				width: 1.5,
				spanGaps: false,
				value: (u, v) => (v == null ? '-' : si(v)),
			}))],
			hooks: { setSelect: [(u) => this.onSelect(u)] },
		};
		fill(this.plotBox);
		this.plot = new uPlot(opts, data, this.plotBox);
	}

	onSelect(u) {
		if (u.select.width < 3) return;
		const from = u.posToVal(u.select.left, 'x'), to = u.posToVal(u.select.left + u.select.width, 'x');
		u.setSelect({ left: 0, width: 0 }, false);
		state.set({ from: Math.floor(from), to: Math.ceil(to) });
	}

	resize() {
		if (this.plot) this.plot.setSize({ width: Math.max(300, this.plotBox.clientWidth), height: 360 });
	}
}
