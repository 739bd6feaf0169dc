// SPDX-License-Identifier: MIT
// A profile as the views use it: a call tree whose nodes carry self and
// total counts. fromFolded() builds it from /api/v1/stacks?format=folded;
// the JSON form (a table of names and kinds, stack rows referring to it)
// is to build the same tree, so views never see the wire format.

export class Node {
	constructor(name, parent) {
		this.name = name;
		this.parent = parent;
		this.self = 0;
		this.total = 0;
		this.children = new Map();
		this.depth = parent ? parent.depth + 1 : 0;
	}

	child(name) {
		let c = this.children.get(name);
		if (!c) {
			c = new Node(name, this);
			this.children.set(name, c);
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

export class Profile {
	constructor() {
		this.root = new Node('all', null);
		this.stacks = 0; // distinct stacks added
		this.maxDepth = 0;
	}

	// Add @count samples of the stack @frames (root first).
	add(frames, count) {
		let n = this.root;
		n.total += count;
		for (const f of frames) {
			n = n.child(f);
			n.total += count;
		}
		n.self += count;
		this.stacks++;
		if (frames.length > this.maxDepth) this.maxDepth = frames.length;
	}

	get total() {
		return this.root.total;
	}

	// The node at @path (names from the root's child), or null.
	find(path) {
		let n = this.root;
		for (const name of path) {
			n = n.children.get(name);
			if (!n) return null;
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

// Folded text ("a;b;c 12" per line) into a Profile. Lines that do not end
// in a count are skipped and counted in .bad.
export function fromFolded(text) {
	const p = new Profile();
	p.bad = 0;
	let at = 0;
	while (at < text.length) {
		let end = text.indexOf('\n', at);
		if (end < 0) end = text.length;
		const line = text.slice(at, end);
		at = end + 1;
		if (!line) continue;
		const sp = line.lastIndexOf(' ');
		const n = sp > 0 ? Number(line.slice(sp + 1)) : NaN;
		if (!(n > 0)) {
			p.bad++;
			continue;
		}
		p.add(line.slice(0, sp).split(';'), n);
	}
	return p;
}

// What kind of code a frame is, from its name as the agent writes it:
// kernel (flamegraph.pl's _[k]), unnamed (module+0xOFF, [unknown]),
// truncated stacks, JIT, shared libraries, or the program's own.
export function kind(name) {
	if (name.endsWith('_[k]')) return 'kernel';
	if (name.startsWith('[truncated') || name === '[lost]') return 'truncated';
	if (name === '[unknown]' || /\+0x[0-9a-f]+$/i.test(name)) return 'unnamed';
	if (name.endsWith('_[j]') || /^(LazyCompile|Interpreted|JIT|Builtin):/.test(name)) return 'jit';
	if (/\.so(\.[0-9.]+)?(\+|$)|^(__libc|_dl_|__GI_|pthread_|malloc|free|mem(cpy|set|move)|str[a-z]+$)/.test(name)) return 'lib';
	return 'user';
}
