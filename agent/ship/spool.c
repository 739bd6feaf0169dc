// SPDX-License-Identifier: MIT
/*
 * The spool keeps an in-memory index (sorted sequence numbers and sizes) of
 * the batch files in its directory; the files are the truth, the index is
 * rebuilt from them by spool_open. Batches are read back only when a reader
 * asks for one, so memory stays small whatever the cap.
 *
 * Durability: a batch is written as .tmp-NAME, fsync'd, renamed to NAME and
 * the directory fsync'd before spool_put returns. After a crash a batch is
 * either complete under its name or only a .tmp- file, which the next open
 * removes. Removal (unlink) is not fsync'd: a removal lost in a crash only
 * resends a batch, which the sequence number lets a collector ignore.
 */
#include "agent/ship/spool.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fdio.h"

#define SEQ_DIGITS 20
#define TMP_PREFIX ".tmp-"
#define CURSOR_PREFIX "cursor-"
#define CURSOR_KEY_MAX 64
/* A cursor or seq file is one short line; anything longer is not ours. */
#define SMALL_FILE_MAX 4096

struct entry {
	uint64_t seq;
	uint64_t size;
};

struct spool {
	int dirfd;
	int lockfd;
	uint64_t max_bytes;
	uint64_t bytes;
	uint64_t dropped;
	struct entry *v; /* sorted by seq */
	size_t n, cap;
};

/* ---- files ---------------------------------------------------------- */

static int mkdir_p(const char *path, mode_t mode)
{
	size_t len = strlen(path);
	char *p;
	int ret = 0;

	if (!len)
		return -EINVAL;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];

		p[i] = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			ret = -errno;
			break;
		}
		p[i] = c;
	}
	free(p);
	return ret;
}

static int open_dir(const char *dir)
{
	int ret = mkdir_p(dir, 0700);
	int fd;

	if (ret < 0)
		return ret;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Read all of @fd (at most @max bytes, else -EFBIG) into a malloc'd buffer
 * with a NUL after the data (so text can be parsed in place). */
static int read_fd(int fd, size_t max, void **buf, size_t *len)
{
	struct stat st;
	size_t size, off = 0;
	char *b;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || (uint64_t)st.st_size > max)
		return -EFBIG;
	size = (size_t)st.st_size;
	b = malloc(size + 1);
	if (!b)
		return -ENOMEM;
	while (off < size) {
		ssize_t r = pread(fd, b + off, size - off, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int err = r < 0 ? -errno : -EIO; /* shrank under us */

			free(b);
			return err;
		}
		off += (size_t)r;
	}
	b[size] = '\0';
	*buf = b;
	*len = size;
	return 0;
}

static int read_at(int dirfd, const char *name, size_t max, void **buf, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int ret;

	if (fd < 0)
		return -errno;
	ret = read_fd(fd, max, buf, len);
	close(fd);
	return ret;
}

/*
 * Replace DIR/@name with @len bytes of @buf atomically: write .tmp-NAME,
 * flush it, rename. @sync_dir also fsyncs the directory so the rename itself
 * survives a crash; without it the file is flushed with fdatasync only.
 */
static int write_atomic(int dirfd, const char *name, const void *buf, size_t len, bool sync_dir)
{
	char tmp[NAME_MAX + 1];
	int fd, ret;

	if ((size_t)snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	ret = fdio_write_all(fd, buf, len);
	if (!ret && (sync_dir ? fsync(fd) : fdatasync(fd)) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret)
		goto out_unlink;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	if (sync_dir && fsync(dirfd) < 0)
		return -errno;
	return 0;

out_unlink:
	unlinkat(dirfd, tmp, 0);
	return ret;
}

static void batch_name(char name[SEQ_DIGITS + 1], uint64_t seq)
{
	snprintf(name, SEQ_DIGITS + 1, "%0*" PRIu64, SEQ_DIGITS, seq);
}

/* Exactly 20 decimal digits that fit 64 bits. */
static bool parse_batch_name(const char *name, uint64_t *seq)
{
	uint64_t v = 0;

	for (int i = 0; i < SEQ_DIGITS; i++) {
		unsigned d;

		if (name[i] < '0' || name[i] > '9')
			return false;
		d = (unsigned)(name[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (name[SEQ_DIGITS] != '\0')
		return false;
	*seq = v;
	return true;
}

/* A decimal number at the start of @s, followed by whitespace or the end. */
static int parse_leading_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EBADMSG;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		x = x * 10 + d;
	}
	if (*p && !isspace((unsigned char)*p))
		return -EBADMSG;
	*v = x;
	return 0;
}

static int load_u64(int dirfd, const char *name, uint64_t *v)
{
	void *buf;
	size_t len;
	int ret = read_at(dirfd, name, SMALL_FILE_MAX, &buf, &len);

	if (ret == -EFBIG)
		return -EBADMSG;
	if (ret < 0)
		return ret;
	ret = parse_leading_u64(buf, v);
	free(buf);
	return ret;
}

static bool valid_cursor_key(const char *key)
{
	size_t n = 0;

	for (const char *p = key; *p; p++, n++) {
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return false;
	}
	return n >= 1 && n <= CURSOR_KEY_MAX;
}

/* ---- index ---------------------------------------------------------- */

/* Index of the first entry with seq >= @seq (n if none). */
static size_t lower_bound(const struct spool *s, uint64_t seq)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int index_reserve(struct spool *s, size_t want)
{
	struct entry *v;
	size_t cap;

	if (want <= s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 64;
	while (cap < want)
		cap *= 2;
	v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

/* Forget entry @i and unlink its file. */
static void index_delete(struct spool *s, size_t i)
{
	char name[SEQ_DIGITS + 1];

	batch_name(name, s->v[i].seq);
	unlinkat(s->dirfd, name, 0);
	s->bytes -= s->v[i].size;
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
}

static void enforce_cap(struct spool *s)
{
	while (s->n && s->bytes > s->max_bytes) {
		index_delete(s, 0);
		s->dropped++;
	}
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A stream over the directory @dirfd (a dup of it, from the start): 0 or -errno. */
static int dir_stream(int dirfd, DIR **out)
{
	int fd = dup(dirfd);
	DIR *d;
	int ret;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	rewinddir(d);
	*out = d;
	return 0;
}

/* Index the batches in the directory and remove stale temp files. */
static int scan(struct spool *s)
{
	bool removed = false;
	struct dirent *de;
	DIR *d;
	int ret = dir_stream(s->dirfd, &d);

	if (ret)
		return ret;
	while ((errno = 0, de = readdir(d))) {
		struct stat st;
		uint64_t seq;

		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (unlinkat(s->dirfd, de->d_name, 0) == 0)
				removed = true;
			continue;
		}
		if (!parse_batch_name(de->d_name, &seq))
			continue;
		if (fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		ret = index_reserve(s, s->n + 1);
		if (ret)
			break;
		s->v[s->n++] = (struct entry){ .seq = seq, .size = (uint64_t)st.st_size };
		s->bytes += (uint64_t)st.st_size;
	}
	if (!ret && errno)
		ret = -errno;
	closedir(d);
	if (ret)
		return ret;
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_entry);
	if (removed && fsync(s->dirfd) < 0)
		return -errno;
	return 0;
}

/* ---- API ------------------------------------------------------------ */

struct spool *spool_open(const char *dir, uint64_t max_bytes)
{
	struct spool *s;
	int ret;

	if (!dir || !max_bytes) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->max_bytes = max_bytes;
	s->lockfd = -1;
	s->dirfd = open_dir(dir);
	if (s->dirfd < 0) {
		ret = s->dirfd;
		goto err;
	}
	s->lockfd = openat(s->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lockfd < 0) {
		ret = -errno;
		goto err;
	}
	if (flock(s->lockfd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto err;
	}
	ret = scan(s);
	if (ret)
		goto err;
	enforce_cap(s);
	return s;

err:
	spool_close(s);
	errno = -ret;
	return NULL;
}

/* Also undoes a spool_open() that failed half-way (fds still -1). */
void spool_close(struct spool *s)
{
	if (!s)
		return;
	if (s->lockfd >= 0)
		close(s->lockfd); /* releases the flock */
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->v);
	free(s);
}

int spool_put(struct spool *s, uint64_t seq, const void *buf, size_t len)
{
	char name[SEQ_DIGITS + 1];
	size_t i;
	int ret;

	if ((uint64_t)len > s->max_bytes) {
		s->dropped++;
		return -EFBIG;
	}
	ret = index_reserve(s, s->n + 1);
	if (ret)
		return ret;
	batch_name(name, seq);
	ret = write_atomic(s->dirfd, name, buf, len, true);
	if (ret)
		return ret;
	i = lower_bound(s, seq);
	if (i < s->n && s->v[i].seq == seq) {
		s->bytes -= s->v[i].size;
	} else {
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(*s->v));
		s->n++;
	}
	s->v[i] = (struct entry){ .seq = seq, .size = len };
	s->bytes += len;
	enforce_cap(s);
	return 0;
}

int spool_next_after(const struct spool *s, uint64_t after, uint64_t *seq)
{
	size_t i;

	if (after == UINT64_MAX)
		return -ENOENT;
	i = lower_bound(s, after + 1);
	if (i >= s->n)
		return -ENOENT;
	*seq = s->v[i].seq;
	return 0;
}

int spool_last(const struct spool *s, uint64_t *seq)
{
	if (!s->n)
		return -ENOENT;
	*seq = s->v[s->n - 1].seq;
	return 0;
}

/* Read the batch at index >= @i; unreadable ones are dropped on the way. */
static int peek_from(struct spool *s, size_t i, uint64_t *seq, void **buf, size_t *len)
{
	while (i < s->n) {
		char name[SEQ_DIGITS + 1];
		uint64_t max = s->max_bytes;
		void *b;
		size_t l;
		int ret;

		batch_name(name, s->v[i].seq);
		ret = read_at(s->dirfd, name, max > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)max, &b, &l);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0) {
			/* Vanished, replaced by something too big, or an I/O
			 * error: nothing a retry would fix; do not block the queue. */
			index_delete(s, i);
			s->dropped++;
			continue;
		}
		s->bytes = s->bytes - s->v[i].size + l;
		s->v[i].size = l;
		*seq = s->v[i].seq;
		*buf = b;
		*len = l;
		return 0;
	}
	return -ENOENT;
}

int spool_peek_oldest(struct spool *s, uint64_t *seq, void **buf, size_t *len)
{
	return peek_from(s, 0, seq, buf, len);
}

int spool_peek_after(struct spool *s, uint64_t after, uint64_t *seq, void **buf, size_t *len)
{
	if (after == UINT64_MAX)
		return -ENOENT;
	return peek_from(s, lower_bound(s, after + 1), seq, buf, len);
}

int spool_remove(struct spool *s, uint64_t seq)
{
	size_t i = lower_bound(s, seq);

	if (i >= s->n || s->v[i].seq != seq)
		return -ENOENT;
	index_delete(s, i);
	return 0;
}

int spool_remove_upto(struct spool *s, uint64_t seq)
{
	int n = 0;

	while (s->n && s->v[0].seq <= seq) {
		index_delete(s, 0);
		n++;
	}
	return n;
}

uint64_t spool_bytes(const struct spool *s)
{
	return s->bytes;
}

size_t spool_count(const struct spool *s)
{
	return s->n;
}

size_t spool_count_after(const struct spool *s, uint64_t after)
{
	if (after == UINT64_MAX)
		return 0;
	return s->n - lower_bound(s, after + 1);
}

uint64_t spool_dropped(const struct spool *s)
{
	return s->dropped;
}

int spool_cursor_load(struct spool *s, const char *key, uint64_t *seq)
{
	char name[NAME_MAX + 1];

	if (!valid_cursor_key(key))
		return -EINVAL;
	snprintf(name, sizeof(name), CURSOR_PREFIX "%s", key);
	return load_u64(s->dirfd, name, seq);
}

int spool_cursor_store(struct spool *s, const char *key, uint64_t seq, const char *label)
{
	char name[NAME_MAX + 1];
	char *text = NULL;
	int n, ret;

	if (!valid_cursor_key(key))
		return -EINVAL;
	snprintf(name, sizeof(name), CURSOR_PREFIX "%s", key);
	/* The label is for people reading the directory; keep it one line. */
	n = asprintf(&text, "%" PRIu64 " %.*s\n", seq, label ? (int)strcspn(label, "\r\n") : 0,
		     label ? label : "");
	if (n < 0)
		return -ENOMEM;
	ret = write_atomic(s->dirfd, name, text, (size_t)n, false);
	free(text);
	return ret;
}

/* The largest number found in @dirfd: DIR/seq, batch names and cursors. */
static int highest_seq(int dirfd, uint64_t *max)
{
	struct dirent *de;
	uint64_t hi = 0, v;
	DIR *d;
	int ret = dir_stream(dirfd, &d);

	if (ret)
		return ret;
	while ((errno = 0, de = readdir(d))) {
		if (parse_batch_name(de->d_name, &v)) {
			if (v > hi)
				hi = v;
		} else if ((!strcmp(de->d_name, "seq") ||
			    !strncmp(de->d_name, CURSOR_PREFIX, strlen(CURSOR_PREFIX))) &&
			   load_u64(dirfd, de->d_name, &v) == 0) {
			if (v > hi)
				hi = v;
		}
	}
	if (errno)
		ret = -errno;
	closedir(d);
	if (!ret)
		*max = hi;
	return ret;
}

int spool_next_seq(const char *dir, uint64_t *seq)
{
	char text[32];
	uint64_t hi = 0;
	int dirfd, n, ret;

	dirfd = open_dir(dir);
	if (dirfd < 0)
		return dirfd;
	ret = highest_seq(dirfd, &hi);
	if (ret)
		goto out;
	if (hi == UINT64_MAX) {
		ret = -EOVERFLOW;
		goto out;
	}
	n = snprintf(text, sizeof(text), "%" PRIu64 "\n", hi + 1);
	ret = write_atomic(dirfd, "seq", text, (size_t)n, true);
	if (!ret)
		*seq = hi + 1;
out:
	close(dirfd);
	return ret;
}
