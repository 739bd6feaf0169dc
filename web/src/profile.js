// SPDX-License-Identifier: MIT
// A profile as the views use it. The stack rows of a response
// (/api/v1/stacks?format=json or /api/v1/diff?format=json) are kept as
// they came (a table of names and kinds, rows of name indexes), and the
// views ask for call trees derived from them: the whole tree, with a
// frame focused on or hidden, the callers and callees of one function
// (sandwich), the per-function self and total (top table). Each tree is
// built once per response and transformation, never on a mouse move.

export class Node {
	constructor(id, name, parent) {
		this.id = id; // index into the names table (-1 for the root)
		this.name = name;
		this.parent = parent;
		this.self = 0;
		this.total = 0;
		this.children = new Map(); // by name index
		this.depth = parent ? parent.depth + 1 : 0;
	}

	child(id, name) {
		let c = this.children.get(id);
		if (!c) {
			c = new Node(id, name, this);
			this.children.set(id, c);
		}
		return c;
	}

	// Children, largest first, then by name: a stable layout.
	sorted() {
		if (!this._sorted || this._sortedN !== this.children.size) {
			this._sorted = [...this.children.values()].sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
			this._sortedN = this.children.size;
		}
		return this._sorted;
	}

	// Names from the root's child down to this node.
	path() {
		const p = [];
		for (let n = this; n.parent; n = n.parent) p.push(n.name);
		return p.reverse();
	}
}

// A call tree over a names table. Diff trees carry .base and .target per
// node besides .total (their drawn width).
export class Tree {
	constructor(data) {
		this.data = data; // the Data it came from: names, kinds
		this.root = new Node(-1, 'all', null);
		this.stacks = 0;
		this.maxDepth = 0;
		this.shareOf = 0; // shares are of this many samples when set (a sandwich: all of the selection's)
	}

	// Add @count samples of the frames @f[from..to) (name indexes, root first), walked by @step (1 or -1).
	add(f, from, to, step, count) {
		const names = this.data.names;
		let n = this.root, d = 0;
		n.total += count;
		for (let i = from; i !== to; i += step) {
			n = n.child(f[i], names[f[i]]);
			n.total += count;
			d++;
		}
		n.self += count;
		this.stacks++;
		if (d > this.maxDepth) this.maxDepth = d;
		return n;
	}

	get total() {
		return this.root.total;
	}

	kind(node) {
		return node.id < 0 ? 'root' : this.data.kinds[node.id];
	}

	// The node at @path (names from the root's child), or null.
	find(path) {
		let n = this.root;
		for (const name of path) {
			let next = null;
			for (const c of n.children.values()) if (c.name === name) { next = c; break; }
			if (!next) return null;
			n = next;
		}
		return n;
	}

	// Samples of stacks holding a frame whose name @re matches: each
	// stack counted once, however many of its frames match.
	matched(re) {
		let sum = 0;
		const walk = (n) => {
			for (const c of n.children.values()) {
				if (re.test(c.name)) sum += c.total;
				else walk(c);
			}
		};
		walk(this.root);
		return sum;
	}
}

// The rows of a stacks answer: names, kinds, rows [count, [name index...]] as parsed,
// totals and rates; for a diff, base counts per row too.
export class Data {
	constructor(j, diff) {
		this.names = j.names;
		this.kinds = j.kinds || j.names.map(() => 'function');
		this.diff = !!diff;
		const n = j.stacks.length;
		this.counts = new Float64Array(n);
		this.base = diff ? new Float64Array(n) : null;
		this.frames = new Array(n);
		for (let i = 0; i < n; i++) {
			const r = j.stacks[i];
			if (diff) {
				this.base[i] = r[0];
				this.counts[i] = r[1];
				this.frames[i] = r[2];
			} else {
				this.counts[i] = r[0];
				this.frames[i] = r[1];
			}
		}
		const side = diff ? j.target : j;
		this.totals = side.totals || { samples: 0, cpu_ns: 0 };
		this.rates = side.rates || [];
		this.unit = side.unit || 'samples';
		this.baseSide = diff ? j.base : null;
		this.index = new Map(this.names.map((s, i) => [s, i]));
		this.cache = new Map();
	}

	get samples() {
		return this.totals.samples;
	}

	// ns of CPU time per sample (0 when the event has none).
	get nsPerSample() {
		return this.totals.samples ? this.totals.cpu_ns / this.totals.samples : 0;
	}

	id(name) {
		const i = this.index.get(name);
		return i === undefined ? -1 : i;
	}

	// The rows after focus (keep rows through the name) and hide (drop the
	// name's frames, its callees merged up into its caller): [counts, frames, base].
	rows(focus, hide) {
		const key = 'rows\n' + (focus ?? '') + '\n' + (hide ?? '');
		if (this.cache.has(key)) return this.cache.get(key);
		const fi = focus ? this.id(focus) : -2, hi = hide ? this.id(hide) : -2;
		let out;
		if (fi === -2 && hi === -2) out = { counts: this.counts, frames: this.frames, base: this.base };
		else {
			const counts = [], frames = [], base = [];
			for (let i = 0; i < this.frames.length; i++) {
				let f = this.frames[i];
				if (fi !== -2 && !f.includes(fi)) continue;
				if (hi !== -2 && f.includes(hi)) f = f.filter((x) => x !== hi);
				if (!f.length) continue;
				counts.push(this.counts[i]);
				frames.push(f);
				if (this.base) base.push(this.base[i]);
			}
			out = { counts, frames, base: this.base ? base : null };
		}
		this.cache.set(key, out);
		return out;
	}

	memo(key, make) {
		if (!this.cache.has(key)) this.cache.set(key, make());
		return this.cache.get(key);
	}

	// The call tree (root first), after focus and hide.
	tree(focus, hide) {
		return this.memo(`tree\n${focus ?? ''}\n${hide ?? ''}`, () => {
			const { counts, frames } = this.rows(focus, hide);
			const t = new Tree(this);
			for (let i = 0; i < frames.length; i++) t.add(frames[i], 0, frames[i].length, 1, counts[i]);
			return t;
		});
	}

	// The sandwich of @fn: callers (fn at the root, its callers above it)
	// and callees (fn at the root, what it calls below), from each stack's
	// outermost @fn frame, so recursion counts once.
	sandwich(fn, focus, hide) {
		return this.memo(`sandwich\n${fn}\n${focus ?? ''}\n${hide ?? ''}`, () => {
			const id = this.id(fn);
			const { counts, frames } = this.rows(focus, hide);
			const callers = new Tree(this), callees = new Tree(this);
			for (let i = 0; i < frames.length; i++) {
				const f = frames[i], p = id < 0 ? -1 : f.indexOf(id);
				if (p < 0) continue;
				callers.add(f, p, -1, -1, counts[i]);
				callees.add(f, p, f.length, 1, counts[i]);
			}
			let all = 0;
			for (let i = 0; i < counts.length; i++) all += counts[i];
			callers.shareOf = callees.shareOf = all;
			return { callers, callees };
		});
	}

	// Per function: self (leaf samples) and total (samples of stacks
	// holding it, once per stack), after focus and hide; largest total first.
	functions(focus, hide) {
		return this.memo(`functions\n${focus ?? ''}\n${hide ?? ''}`, () => {
			const { counts, frames } = this.rows(focus, hide);
			const self = new Float64Array(this.names.length), total = new Float64Array(this.names.length);
			const seen = new Int32Array(this.names.length).fill(-1);
			let all = 0;
			for (let i = 0; i < frames.length; i++) {
				const f = frames[i], c = counts[i];
				all += c;
				for (let k = 0; k < f.length; k++) {
					if (seen[f[k]] === i) continue;
					seen[f[k]] = i;
					total[f[k]] += c;
				}
				self[f[f.length - 1]] += c;
			}
			const out = [];
			for (let i = 0; i < this.names.length; i++) {
				if (total[i]) out.push({ id: i, name: this.names[i], kind: this.kinds[i], self: self[i], total: total[i] });
			}
			out.sort((a, b) => b.total - a.total || b.self - a.self);
			return { all, rows: out };
		});
	}

	// The diff tree: each node's .base and .target samples, .total its
	// drawn width: the mean of both sides' shares (normalised) or the sum
	// of both sides' samples, so frames of either side alone are drawn.
	diffTree(normalize, focus, hide) {
		return this.memo(`diff\n${normalize}\n${focus ?? ''}\n${hide ?? ''}`, () => {
			const { counts, frames, base } = this.rows(focus, hide);
			let B = 0, T = 0;
			for (let i = 0; i < frames.length; i++) {
				B += base[i];
				T += counts[i];
			}
			const t = new Tree(this);
			t.baseTotal = B;
			t.targetTotal = T;
			const SCALE = 1e6;
			for (let i = 0; i < frames.length; i++) {
				const f = frames[i], b = base[i], c = counts[i];
				const w = normalize ? ((B ? b / B : 0) + (T ? c / T : 0)) * SCALE / 2 : b + c;
				let n = t.root;
				n.total += w;
				n.base = (n.base || 0) + b;
				n.target = (n.target || 0) + c;
				for (let k = 0; k < f.length; k++) {
					n = n.child(f[k], this.names[f[k]]);
					n.total += w;
					n.base = (n.base || 0) + b;
					n.target = (n.target || 0) + c;
				}
				n.self += w;
				if (f.length > t.maxDepth) t.maxDepth = f.length;
				t.stacks++;
			}
			return t;
		});
	}

	// Per function of the diff: base and target totals (once per stack).
	diffFunctions(focus, hide) {
		return this.memo(`difffn\n${focus ?? ''}\n${hide ?? ''}`, () => {
			const { counts, frames, base } = this.rows(focus, hide);
			const bt = new Float64Array(this.names.length), tt = new Float64Array(this.names.length);
			const seen = new Int32Array(this.names.length).fill(-1);
			let B = 0, T = 0;
			for (let i = 0; i < frames.length; i++) {
				const f = frames[i];
				B += base[i];
				T += counts[i];
				for (let k = 0; k < f.length; k++) {
					if (seen[f[k]] === i) continue;
					seen[f[k]] = i;
					bt[f[k]] += base[i];
					tt[f[k]] += counts[i];
				}
			}
			const rows = [];
			for (let i = 0; i < this.names.length; i++) {
				if (bt[i] || tt[i]) rows.push({ id: i, name: this.names[i], kind: this.kinds[i], base: bt[i], target: tt[i] });
			}
			return { B, T, rows };
		});
	}
}

// Folded text ("a;b;c 12" per line) into a Data, names interned; kinds
// guessed from the names (the JSON form has them from the server).
export function fromFolded(text) {
	const names = [], index = new Map(), stacks = [];
	for (const line of text.split('\n')) {
		const sp = line.lastIndexOf(' ');
		const n = sp > 0 ? Number(line.slice(sp + 1)) : NaN;
		if (!(n > 0)) continue;
		stacks.push([n, line.slice(0, sp).split(';').map((s) => {
			let i = index.get(s);
			if (i === undefined) {
				i = names.length;
				names.push(s);
				index.set(s, i);
			}
			return i;
		})]);
	}
	const samples = stacks.reduce((a, r) => a + r[0], 0);
	return new Data({ names, kinds: names.map(kind), stacks, totals: { samples, cpu_ns: 0 } });
}

// What kind of code a frame is, guessed from its name alone (for folded
// text; the JSON form carries the server's kinds).
export function kind(name) {
	if (name.endsWith('_[k]')) return 'kernel';
	if (name.startsWith('[truncated') || name === '[lost]' || name === '[bad return address]') return 'marker';
	if (name === '[unknown]' || /\+0x[0-9a-f]+$/i.test(name)) return 'unnamed';
	if (name.endsWith('_[j]') || /^(LazyCompile|Interpreted|JIT|Builtin):/.test(name)) return 'jit';
	if (/\.so(\.[0-9.]+)?(\+|$)|^(__libc|_dl_|__GI_|pthread_|malloc|free|mem(cpy|set|move)|str[a-z]+$)/.test(name)) return 'library';
	return 'function';
}
