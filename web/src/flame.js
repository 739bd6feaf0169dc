// SPDX-License-Identifier: MIT
// The flame graph (root at the bottom) and the icicle (root on top), drawn
// on a canvas. Layout: each frame's width is its share of the zoomed
// frame's samples; its ancestors span the width, dimmed. Siblings too thin
// to see (under MIN_PX) are merged into one grey block and not descended
// into, so the work per draw is bounded by the pixels, not by the number of
// stacks. Names are painted with fillText: never markup.
import { el, fill } from './dom.js';
import { count, pct } from './fmt.js';
import { kind } from './profile.js';
import * as state from './state.js';

const ROW = 18;
const MIN_PX = 1; // narrower siblings are merged
const TEXT_MIN_PX = 28; // narrower frames get no label
const FONT = '11px ui-monospace, "DejaVu Sans Mono", Menlo, monospace';

// Hue ranges by kind; a name's hash picks within them, so a function keeps
// its colour from one draw (and one profile) to the next.
const PALETTE = {
	user: [20, 50, 70, 85, 52, 60],
	lib: [195, 215, 55, 70, 58, 66],
	kernel: [0, 15, 65, 80, 60, 68],
	jit: [95, 130, 45, 60, 50, 58],
	unnamed: [0, 0, 0, 0, 62, 70],
	truncated: [270, 285, 25, 35, 62, 70],
};

function hash(s) {
	let h = 2166136261;
	for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
	return (h >>> 0) / 4294967296;
}

export function colour(name) {
	const [h0, h1, s0, s1, l0, l1] = PALETTE[kind(name)];
	const r = hash(name), r2 = hash(name + '\u0001');
	return `hsl(${(h0 + (h1 - h0) * r).toFixed(0)} ${(s0 + (s1 - s0) * r2).toFixed(0)}% ${(l0 + (l1 - l0) * r).toFixed(0)}%)`;
}

export class FlameView {
	constructor(root, { inverted }) {
		this.inverted = inverted; // icicle: root on top
		this.profile = null;
		this.rects = [];
		this.rows = [];
		this.search = null;
		this.crumbs = el('nav', { class: 'crumbs', 'aria-label': 'zoom path' });
		this.input = el('input', {
			type: 'search', id: 'search', placeholder: 'Search functions (regular expression)  /',
			spellcheck: 'false', autocomplete: 'off', oninput: () => this.onSearchInput(),
		});
		this.matched = el('span', { id: 'matched', class: 'matched' });
		this.info = el('span', { class: 'info' });
		this.canvas = el('canvas', { id: 'flame', class: 'flame' });
		this.tip = el('div', { class: 'tooltip', hidden: true });
		this.wrap = el('div', { class: 'canvas-wrap' }, this.canvas, this.tip);
		fill(root, el('div', { class: 'flame-bar' }, this.crumbs, el('div', { class: 'search' }, this.input, this.matched), this.info), this.wrap);
		this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
		this.canvas.addEventListener('mouseleave', () => (this.tip.hidden = true));
		this.canvas.addEventListener('click', (e) => this.onClick(e));
		this.onKey = (e) => this.key(e);
		addEventListener('keydown', this.onKey);
		this.ro = new ResizeObserver(() => this.draw());
		this.ro.observe(this.wrap);
	}

	destroy() {
		removeEventListener('keydown', this.onKey);
		this.ro.disconnect();
	}

	setProfile(p) {
		this.profile = p;
		this.info.textContent = `${count(p.total)} samples · ${count(p.stacks)} stacks`;
		this.sync();
	}

	// Zoom and search from the URL.
	sync() {
		const s = state.get('search') || '';
		if (document.activeElement !== this.input) this.input.value = s;
		this.setSearch(s);
		const path = state.get('zoom');
		this.zoom = (this.profile && path && this.profile.find(path.split(';'))) || this.profile?.root;
		this.draw();
	}

	setSearch(text) {
		this.search = null;
		this.input.classList.remove('bad');
		if (text) {
			try {
				this.search = new RegExp(text);
			} catch {
				this.input.classList.add('bad');
			}
		}
		this.showMatched();
	}

	showMatched() {
		if (!this.search || !this.profile) {
			this.matched.textContent = this.input.classList.contains('bad') ? 'not a regular expression' : '';
			return;
		}
		const m = this.profile.matched(this.search), t = this.profile.total;
		this.matched.textContent = `Matched: ${t ? ((m / t) * 100).toFixed(2) : '0.00'}% (${count(m)} of ${count(t)} samples)`;
		this.matched.dataset.share = t ? String(m / t) : '0';
	}

	onSearchInput() {
		clearTimeout(this.searchTimer);
		this.searchTimer = setTimeout(() => state.set({ search: this.input.value }, { replace: true }), 150);
	}

	key(e) {
		if (e.key === '/' && document.activeElement !== this.input) {
			e.preventDefault();
			this.input.focus();
		} else if (e.key === 'Escape') {
			if (document.activeElement === this.input && this.input.value) {
				this.input.value = '';
				state.set({ search: '' }, { replace: true });
			} else {
				state.set({ zoom: '' });
			}
		}
	}

	// Layout from the zoomed frame: ancestors full width, then its subtree.
	layout(width) {
		const rects = [];
		const z = this.zoom;
		for (let a = z.parent; a; a = a.parent) rects.push({ x: 0, w: width, node: a, depth: a.depth, anc: true });
		rects.push({ x: 0, w: width, node: z, depth: z.depth });
		const scale = z.total ? width / z.total : 0;
		const walk = (n, x0) => {
			let x = x0;
			const kids = n.sorted();
			for (let i = 0; i < kids.length; i++) {
				const c = kids[i], w = c.total * scale;
				if (w < MIN_PX) {
					let sum = 0;
					for (let j = i; j < kids.length; j++) sum += kids[j].total;
					rects.push({ x, w: sum * scale, node: n, depth: c.depth, merged: kids.length - i, samples: sum });
					break;
				}
				rects.push({ x, w, node: c, depth: c.depth });
				walk(c, x);
				x += w;
			}
		};
		walk(z, 0);
		return rects;
	}

	draw() {
		const p = this.profile;
		if (!p || !this.zoom) return;
		const t0 = performance.now();
		const width = Math.max(200, this.wrap.clientWidth);
		const rects = this.layout(width);
		let maxDepth = 0;
		for (const r of rects) if (r.depth > maxDepth) maxDepth = r.depth;
		const height = (maxDepth + 1) * ROW;
		const dpr = devicePixelRatio || 1;
		const cv = this.canvas;
		cv.width = Math.round(width * dpr);
		cv.height = Math.round(height * dpr);
		cv.style.width = width + 'px';
		cv.style.height = height + 'px';
		const g = cv.getContext('2d');
		g.setTransform(dpr, 0, 0, dpr, 0, 0);
		g.clearRect(0, 0, width, height);
		g.font = FONT;
		g.textBaseline = 'middle';
		const charW = g.measureText('m').width || 7;
		this.rows = [];
		for (const r of rects) {
			r.y = this.inverted ? r.depth * ROW : (maxDepth - r.depth) * ROW;
			(this.rows[r.depth] ||= []).push(r);
			this.paint(g, r, charW);
		}
		this.maxDepth = maxDepth;
		this.rects = rects;
		this.drawCrumbs();
		cv.dataset.frames = String(rects.length);
		cv.dataset.drawMs = (performance.now() - t0).toFixed(1);
	}

	paint(g, r, charW) {
		const w = Math.max(r.w - 1, 0.5);
		const name = r.merged ? '' : r.node.name;
		let fillStyle;
		if (r.merged) fillStyle = '#d5d8dc';
		else if (this.search) fillStyle = this.search.test(name) ? '#e040e0' : '#e4e4e4';
		else fillStyle = colour(name);
		g.globalAlpha = r.anc ? 0.45 : 1;
		g.fillStyle = fillStyle;
		g.fillRect(r.x, r.y + 1, w, ROW - 2);
		if (!r.merged && r.w >= TEXT_MIN_PX) {
			const fit = Math.floor((r.w - 8) / charW);
			const label = name.length > fit ? name.slice(0, Math.max(fit - 1, 1)) + '…' : name;
			g.fillStyle = '#1b1b1b';
			g.fillText(label, r.x + 4, r.y + ROW / 2 + 0.5);
		}
		g.globalAlpha = 1;
	}

	drawCrumbs() {
		const chain = [];
		for (let n = this.zoom; n; n = n.parent) chain.unshift(n);
		const kids = [];
		chain.forEach((n, i) => {
			if (i) kids.push(el('span', { class: 'sep', text: '›' }));
			const last = i === chain.length - 1;
			kids.push(el(last ? 'span' : 'a', {
				class: last ? 'crumb current' : 'crumb', href: last ? undefined : '#', title: n.name,
				text: n.parent ? n.name : 'all',
				onclick: last ? undefined : (e) => { e.preventDefault(); state.set({ zoom: n.path().join(';') }); },
			}));
		});
		fill(this.crumbs, ...kids);
	}

	hit(e) {
		const b = this.canvas.getBoundingClientRect();
		const x = e.clientX - b.left, y = e.clientY - b.top;
		const row = Math.floor(y / ROW);
		const depth = this.inverted ? row : this.maxDepth - row;
		const rs = this.rows[depth];
		if (!rs) return null;
		for (const r of rs) if (x >= r.x && x < r.x + Math.max(r.w, 1)) return r;
		return null;
	}

	onMove(e) {
		const r = this.hit(e);
		if (!r) {
			this.tip.hidden = true;
			return;
		}
		const t = this.profile.total;
		const lines = r.merged
			? [`${r.merged} frames too narrow to draw`, `${count(r.samples)} samples (${pct(r.samples / t)})`]
			: [r.node.name, `total: ${count(r.node.total)} samples (${pct(r.node.total / t)})`,
				`self: ${count(r.node.self)} samples (${pct(r.node.self / t)})`,
				this.zoom !== this.profile.root && !r.anc ? `of zoomed: ${pct(r.node.total / this.zoom.total)}` : null,
				`${kind(r.node.name)} · depth ${r.node.depth}`];
		fill(this.tip, ...lines.filter(Boolean).map((l, i) => el('div', { class: i ? 'l' : 'name', text: l })));
		this.tip.hidden = false;
		const wb = this.wrap.getBoundingClientRect();
		let x = e.clientX - wb.left + 14, y = e.clientY - wb.top + 14;
		if (x + this.tip.offsetWidth > wb.width) x = Math.max(0, e.clientX - wb.left - this.tip.offsetWidth - 10);
		this.tip.style.left = x + 'px';
		this.tip.style.top = y + 'px';
	}

	onClick(e) {
		const r = this.hit(e);
		if (!r || r.merged) return;
		state.set({ zoom: r.node.parent ? r.node.path().join(';') : '' });
	}
}
