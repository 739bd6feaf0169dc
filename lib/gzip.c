// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "lib/gzip.h"

int gzip_compress(const void *in, size_t len, int level, uint8_t **out, size_t *outlen)
{
	z_stream z = {0};
	uint8_t *buf, *fit;
	size_t cap;
	int zr;

	/* 16 + window bits: a gzip wrapper rather than zlib's */
	zr = deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
	if (zr != Z_OK)
		return zr == Z_MEM_ERROR ? -ENOMEM : -EIO;
	cap = deflateBound(&z, (uLong)len);
	buf = malloc(cap ? cap : 1);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.next_out = buf;
	/* avail_* are 32-bit: feed and drain in steps below 4 GiB. */
	do {
		size_t in_left = len - (size_t)((const uint8_t *)z.next_in - (const uint8_t *)in);
		size_t out_left = cap - (size_t)(z.next_out - buf);

		z.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
		z.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
		zr = deflate(&z, z.avail_in == in_left ? Z_FINISH : Z_NO_FLUSH);
	} while (zr == Z_OK);
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return zr == Z_MEM_ERROR ? -ENOMEM : -EIO;
	}
	*outlen = (size_t)(z.next_out - buf);
	/* Give back what deflateBound() kept in reserve. */
	fit = realloc(buf, *outlen ? *outlen : 1);
	*out = fit ? fit : buf;
	return 0;
}
