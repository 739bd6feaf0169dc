// SPDX-License-Identifier: MIT
/*
 * stallfs: the smallest FUSE file system that misbehaves, for tests of what
 * a container's FUSE daemon can make the agent wait for. It speaks the
 * kernel's protocol on /dev/fuse directly (no libfuse) and serves one
 * regular file, DIR/map, whose content is the text given; when asked to,
 * it answers the LOOKUP of that file or a READ of it only after SECONDS,
 * as a hung or hostile daemon would. Single-threaded: a stall holds every
 * other request too.
 *
 *   stallfs DIR [+]lookup|read|all|none SECONDS CONTENT|@FILE
 *
 * "all" stalls LOOKUP, GETATTR, OPEN and READ of the file. A leading "+"
 * arms the stalls only at the first SIGUSR1: a binary served from here can
 * be exec'd (and its pages read) first, and its daemon hang afterwards.
 * "@FILE" serves FILE's bytes (read once at the start, executable mode).
 *
 * Mounts at DIR (root only), prints "ready" on stdout once mounted, serves
 * until killed or unmounted. Test tool: prints on stderr, exits 1 on error.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_ID 1
#define FILE_ID 2

static int dev = -1;
static unsigned stall_secs;
static const char *content;
static size_t content_len;
static volatile sig_atomic_t armed = 1;
static const char *where;

static void on_usr1(int sig)
{
	(void)sig;
	armed = 1;
}

/* Wait @secs whatever signals come, if armed and @op is one to stall. */
static void stall(const char *op)
{
	struct timespec ts = {.tv_sec = (time_t)stall_secs};

	if (!armed || (strcmp(where, op) != 0 && strcmp(where, "all") != 0))
		return;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	char *b = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
	    !(b = malloc((size_t)n + 1)) || fread(b, 1, (size_t)n, f) != (size_t)n) {
		perror("stallfs: content file");
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void reply(uint64_t unique, int error, const void *body, size_t len)
{
	struct fuse_out_header h = {.unique = unique, .error = error};
	static char buf[sizeof(h) + (1u << 20)];

	if (error)
		len = 0;
	if (len > sizeof(buf) - sizeof(h))
		len = sizeof(buf) - sizeof(h);
	h.len = (uint32_t)(sizeof(h) + len);
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), body, len);
	if (write(dev, buf, sizeof(h) + len) < 0 && errno != ENOENT)
		perror("stallfs: write");
}

static void attr_of(uint64_t id, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = id;
	a->nlink = 1;
	a->blksize = 4096;
	if (id == ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0755;
		a->size = content_len;
		a->blocks = (a->size + 511) / 512;
	}
}

int main(int argc, char **argv)
{
	static char buf[FUSE_MIN_READ_BUFFER + 65536];
	char opts[128];
	if (argc != 5) {
		fprintf(stderr, "usage: stallfs DIR [+]lookup|read|all|none SECONDS CONTENT|@FILE\n");
		return 1;
	}
	where = argv[2];
	if (where[0] == '+') {
		struct sigaction sa = {.sa_handler = on_usr1};

		where++;
		armed = 0;
		sigaction(SIGUSR1, &sa, NULL);
	}
	stall_secs = (unsigned)strtoul(argv[3], NULL, 10);
	if (argv[4][0] == '@') {
		content = slurp(argv[4] + 1, &content_len);
	} else {
		content = argv[4];
		content_len = strlen(content);
	}
	dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		perror("stallfs: /dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev);
	if (mount("stallfs", argv[1], "fuse.stallfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		perror("stallfs: mount");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		ssize_t n = read(dev, buf, sizeof(buf));
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		void *arg = buf + sizeof(*in);

		if (n < 0 && (errno == EINTR || errno == ENOENT || errno == EAGAIN))
			continue;
		if (n < (ssize_t)sizeof(*in))
			break; /* unmounted (ENODEV) */
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_in *ii = arg;
			struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION,
						  .minor = ii->minor < FUSE_KERNEL_MINOR_VERSION
								   ? ii->minor
								   : FUSE_KERNEL_MINOR_VERSION,
						  .max_readahead = ii->max_readahead,
						  .max_write = 65536};

			reply(in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = {0};

			if (in->nodeid != ROOT_ID || strcmp((char *)arg, "map") != 0) {
				reply(in->unique, -ENOENT, NULL, 0);
				break;
			}
			stall("lookup");
			o.nodeid = FILE_ID;
			o.generation = 1;
			attr_of(FILE_ID, &o.attr);
			reply(in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = {0};

			if (in->nodeid == FILE_ID)
				stall("getattr");
			attr_of(in->nodeid, &o.attr);
			reply(in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_STATFS: {
			struct fuse_statfs_out o = {.st = {.bsize = 4096, .namelen = 255, .frsize = 4096}};

			reply(in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = {.fh = 1, .open_flags = FOPEN_DIRECT_IO};

			if (in->opcode == FUSE_OPEN)
				stall("open");
			reply(in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ: {
			struct fuse_read_in *ri = arg;
			size_t len = content_len, off = ri->offset < len ? ri->offset : len;
			size_t want = len - off < ri->size ? len - off : ri->size;

			stall("read");
			reply(in->unique, 0, content + off, want);
			break;
		}
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
			reply(in->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break; /* no answer expected (an interrupt is ignored: hostile) */
		case FUSE_DESTROY:
			reply(in->unique, 0, NULL, 0);
			return 0;
		default:
			reply(in->unique, -ENOSYS, NULL, 0);
		}
	}
	return 0;
}
