// SPDX-License-Identifier: MIT
// The flame graph (root at the bottom) and the icicle (root on top), drawn
// on a canvas. Layout: each frame's width is its share of the zoomed
// frame's samples; its ancestors span the width, dimmed. Siblings too thin
// to see (under MIN_PX) are merged into one grey block and not descended
// into, so the work per draw is bounded by the pixels, not by the number of
// stacks. Names are painted with fillText: never markup.
import { el, fill } from './dom.js';
import { count, dur, pct } from './fmt.js';
import * as state from './state.js';

const ROW = 18;
const MIN_PX = 1; // narrower siblings are merged
const TEXT_MIN_PX = 28; // narrower frames get no label
const FONT = '11px ui-monospace, "DejaVu Sans Mono", Menlo, monospace';

// Hue ranges by kind (the server's kinds, /api/v1/stacks?format=json); a
// name's hash picks within them, so a function keeps its colour from one
// draw (and one profile) to the next.
const PALETTE = {
	binary: [20, 48, 75, 88, 56, 64],
	function: [36, 56, 70, 85, 56, 64],
	library: [195, 215, 55, 70, 58, 66],
	kernel: [350, 365, 60, 75, 62, 70],
	jit: [95, 130, 45, 60, 50, 58],
	unnamed: [0, 0, 0, 0, 64, 72],
	marker: [270, 285, 30, 40, 62, 70],
	comm: [175, 185, 35, 45, 60, 68],
	root: [215, 215, 10, 10, 78, 78],
};

// The legend's order and words.
export const KINDS = [
	['binary', 'program'], ['library', 'shared library'], ['kernel', 'kernel'], ['jit', 'JIT'],
	['function', 'function (no module)'], ['unnamed', 'unnamed'], ['marker', 'truncated'], ['comm', 'process'],
];

function hash(s) {
	let h = 2166136261;
	for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
	return (h >>> 0) / 4294967296;
}

export function colour(name, k) {
	const [h0, h1, s0, s1, l0, l1] = PALETTE[k] || PALETTE.function;
	const r = hash(name), r2 = hash(name + '\u0001');
	return `hsl(${((h0 + (h1 - h0) * r) % 360).toFixed(0)} ${(s0 + (s1 - s0) * r2).toFixed(0)}% ${(l0 + (l1 - l0) * r).toFixed(0)}%)`;
}

export function legend(kinds = KINDS) {
	return el('div', { class: 'legend', 'aria-label': 'colours' }, ...kinds.map(([k, label]) => {
		const sw = el('span', { class: 'sw' });
		sw.style.background = PALETTE[k] ? `hsl(${PALETTE[k][0] + 10} ${PALETTE[k][3]}% ${PALETTE[k][4] + 2}%)` : k;
		return el('span', { class: 'key', 'data-kind': k }, sw, label);
	}));
}

// The focus and hide chips of the page (URL keys focus, hide): each
// removable. Empty when neither is set.
export function transformChips() {
	const box = el('div', { class: 'xchips' });
	for (const [k, what] of [['focus', 'focus'], ['hide', 'hidden']]) {
		const v = state.get(k);
		if (!v) continue;
		box.append(el('span', { class: 'xchip ' + k, 'data-key': k, title: v }, el('b', { text: what + ' ' }), el('span', { class: 'v', text: v }),
			el('button', { type: 'button', class: 'x', title: `remove ${what}`, 'aria-label': `remove ${what}`, text: '×', onclick: () => state.set({ [k]: '' }) })));
	}
	return box;
}

// A flame graph (or icicle) of a Tree. Options:
//   inverted   root on top (icicle)
//   id         the canvas' id (default flame)
//   search     own the search box (URL key search); else only follow it
//   zoomKey    the URL key of the zoom path (default zoom); null: kept here
//   menu       right-click offers focus, hide and the sandwich view
//   colour(tree, node), tip(tree, node): override fill and tooltip lines
//   title      a heading above the graph
export class FlameView {
	constructor(root, opts = {}) {
		this.opts = { id: 'flame', search: true, zoomKey: 'zoom', menu: true, ...opts };
		this.inverted = !!opts.inverted;
		this.tree = null;
		this.rects = [];
		this.rows = [];
		this.search = null;
		this.localZoom = '';
		this.crumbs = el('nav', { class: 'crumbs', 'aria-label': 'zoom path' });
		this.matched = el('span', { class: 'matched', id: this.opts.search ? 'matched' : undefined });
		this.info = el('span', { class: 'info' });
		this.canvas = el('canvas', { id: this.opts.id, class: 'flame' });
		this.tip = el('div', { class: 'tooltip', hidden: true });
		this.menuBox = el('div', { class: 'menu', hidden: true, role: 'menu' });
		this.wrap = el('div', { class: 'canvas-wrap' }, this.canvas, this.tip, this.menuBox);
		const bar = [this.crumbs];
		if (this.opts.search) {
			this.input = el('input', {
				type: 'search', id: 'search', placeholder: 'Search functions (regular expression)  /',
				spellcheck: 'false', autocomplete: 'off', oninput: () => this.onSearchInput(),
			});
			bar.push(el('div', { class: 'search' }, this.input, this.matched));
		} else bar.push(this.matched);
		bar.push(this.info);
		fill(root, opts.title ? el('h3', { class: 'graph-title', text: opts.title }) : null, el('div', { class: 'flame-bar' }, ...bar), this.wrap);
		this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
		this.canvas.addEventListener('mouseleave', () => (this.tip.hidden = true));
		this.canvas.addEventListener('click', (e) => this.onClick(e));
		this.canvas.addEventListener('contextmenu', (e) => this.onMenu(e));
		this.onKey = (e) => this.key(e);
		this.onDoc = (e) => { if (!this.menuBox.contains(e.target)) this.menuBox.hidden = true; };
		addEventListener('keydown', this.onKey);
		addEventListener('mousedown', this.onDoc);
		this.width = 0;
		this.ro = new ResizeObserver(() => {
			if (this.wrap.clientWidth !== this.width) this.draw();
		});
		this.ro.observe(this.wrap);
	}

	destroy() {
		removeEventListener('keydown', this.onKey);
		removeEventListener('mousedown', this.onDoc);
		this.ro.disconnect();
	}

	setTree(t) {
		this.tree = t;
		const ns = t.data.nsPerSample;
		this.info.textContent = `${count(t.total)} ${t.data.unit} · ${count(t.stacks)} stacks` + (ns && !t.data.diff ? ` · ${dur(t.total * ns)} CPU` : '');
		this.canvas.dataset.total = String(t.total);
		this.sync();
	}

	zoomPath() {
		return this.opts.zoomKey ? state.get(this.opts.zoomKey) : this.localZoom;
	}

	setZoom(path) {
		if (this.opts.zoomKey) state.set({ [this.opts.zoomKey]: path });
		else {
			this.localZoom = path;
			this.sync();
		}
	}

	// Zoom and search from the URL.
	sync() {
		const s = state.get('search') || '';
		if (this.input && document.activeElement !== this.input) this.input.value = s;
		this.setSearch(s);
		const path = this.zoomPath();
		this.zoom = (this.tree && path && this.tree.find(path.split(';'))) || this.tree?.root;
		this.draw();
	}

	setSearch(text) {
		this.search = null;
		this.bad = false;
		if (text) {
			try {
				this.search = new RegExp(text);
			} catch {
				this.bad = true;
			}
		}
		this.input?.classList.toggle('bad', this.bad);
		this.showMatched();
	}

	showMatched() {
		if (!this.search || !this.tree) {
			this.matched.textContent = this.bad ? 'not a regular expression' : '';
			return;
		}
		const m = this.tree.matched(this.search), t = this.tree.total;
		this.matched.textContent = `Matched: ${t ? ((m / t) * 100).toFixed(2) : '0.00'}%` + (this.tree.data.diff ? '' : ` (${count(m)} of ${count(t)} samples)`);
		this.matched.dataset.share = t ? String(m / t) : '0';
	}

	onSearchInput() {
		clearTimeout(this.searchTimer);
		this.searchTimer = setTimeout(() => state.set({ search: this.input.value }, { replace: true }), 150);
	}

	key(e) {
		if (e.key === 'Escape' && !this.menuBox.hidden) {
			this.menuBox.hidden = true;
			return;
		}
		if (!this.opts.search) return;
		if (e.key === '/' && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement?.tagName)) {
			e.preventDefault();
			this.input.focus();
		} else if (e.key === 'Escape') {
			if (document.activeElement === this.input && this.input.value) {
				this.input.value = '';
				state.set({ search: '' }, { replace: true });
			} else {
				this.setZoom('');
			}
		}
	}

	// Layout from the zoomed frame: ancestors full width, then its subtree.
	// Siblings narrower than MIN_PX are merged into one block and not
	// descended into: the work is bounded by the pixels.
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
					if (sum * scale >= 0.5) rects.push({ x, w: sum * scale, node: n, depth: c.depth, merged: kids.length - i, samples: sum });
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
		const t = this.tree;
		if (!t || !this.zoom) return;
		const t0 = performance.now();
		const width = Math.max(200, this.wrap.clientWidth);
		this.width = this.wrap.clientWidth;
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
		// For tests and the console: what is drawn where (CSS pixels).
		cv.cgperfFrames = () => rects.map((r) => ({ name: r.merged ? null : r.node.name, depth: r.depth, x: r.x, y: r.y, w: r.w, anc: !!r.anc,
			total: r.merged ? r.samples : r.node.total, self: r.node.self, base: r.node.base, target: r.node.target }));
		cv.dataset.drawMs = (performance.now() - t0).toFixed(1);
	}

	fillOf(g, r) {
		if (r.merged) return '#d5d8dc';
		if (this.search) return this.search.test(r.node.name) ? '#e040e0' : '#e4e4e4';
		if (this.opts.colour) return this.opts.colour(g, this.tree, r.node);
		return colour(r.node.name, this.tree.kind(r.node));
	}

	paint(g, r, charW) {
		const w = Math.max(r.w - 1, 0.5);
		const name = r.merged ? '' : r.node.parent ? r.node.name : 'all';
		g.globalAlpha = r.anc ? 0.45 : 1;
		g.fillStyle = this.fillOf(g, r);
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
				onclick: last ? undefined : (e) => { e.preventDefault(); this.setZoom(n.path().join(';')); },
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

	tipLines(r) {
		const t = this.tree, all = t.shareOf || t.total, ns = t.data.nsPerSample, n = r.node;
		if (r.merged) return [`${r.merged} frames too narrow to draw`, `${count(r.samples)} samples (${pct(r.samples / all)})`];
		if (this.opts.tip) return this.opts.tip(t, n);
		const u = t.data.unit;
		return [n.parent ? n.name : 'all',
			`total: ${count(n.total)} ${u} (${pct(n.total / all)})` + (ns ? ` · ${dur(n.total * ns)} CPU` : ''),
			`self: ${count(n.self)} ${u} (${pct(n.self / all)})` + (ns ? ` · ${dur(n.self * ns)} CPU` : ''),
			this.zoom !== t.root && !r.anc ? `of zoomed: ${pct(n.total / this.zoom.total)}` : null,
			`${t.kind(n)} · depth ${n.depth}` + (this.opts.menu && n.parent ? ' · right-click: focus, hide, sandwich' : '')];
	}

	onMove(e) {
		const r = this.hit(e);
		if (!r || !this.menuBox.hidden) {
			this.tip.hidden = true;
			return;
		}
		fill(this.tip, ...this.tipLines(r).filter(Boolean).map((l, i) => el('div', { class: i ? 'l' : 'name', text: l })));
		this.tip.hidden = false;
		this.place(this.tip, e);
	}

	place(box, e) {
		const wb = this.wrap.getBoundingClientRect();
		let x = e.clientX - wb.left + 14, y = e.clientY - wb.top + 14;
		if (x + box.offsetWidth > wb.width) x = Math.max(0, e.clientX - wb.left - box.offsetWidth - 10);
		box.style.left = x + 'px';
		box.style.top = y + 'px';
	}

	onClick(e) {
		const r = this.hit(e);
		if (!r || r.merged) return;
		this.setZoom(r.node.parent ? r.node.path().join(';') : '');
	}

	// Right-click: zoom, focus, hide, sandwich of the frame's function.
	onMenu(e) {
		const r = this.hit(e);
		if (!this.opts.menu || !r || r.merged || !r.node.parent) return;
		e.preventDefault();
		const name = r.node.name, close = () => (this.menuBox.hidden = true);
		const item = (action, text, fn) => el('button', { type: 'button', role: 'menuitem', 'data-action': action, text, onclick: () => { close(); fn(); } });
		fill(this.menuBox, el('div', { class: 'name', text: name }),
			item('zoom', 'Zoom into this frame', () => this.setZoom(r.node.path().join(';'))),
			item('focus', 'Focus: only stacks through this function', () => state.set({ focus: name, zoom: '' })),
			item('hide', 'Hide this function (merge its callees up)', () => state.set({ hide: name, zoom: '' })),
			item('sandwich', 'Sandwich: its callers and callees', () => state.set({ view: 'sandwich', fn: name, zoom: '' })),
			item('top', 'Show in the top table', () => state.set({ view: 'top', search: '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$' })));
		this.tip.hidden = true;
		this.menuBox.hidden = false;
		this.place(this.menuBox, e);
	}
}
