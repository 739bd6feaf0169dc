// SPDX-License-Identifier: MIT
/*
 * libFuzzer over config_parse(): the agent's YAML configuration (libyaml's
 * events, then every key's checks: durations, sizes, URLs, event names,
 * probe specs, label and cgroup filters). A file an operator writes is not
 * hostile, but one typo must give a message, never a crash, and the
 * checks are hand-written. Properties: 0 gives a configuration and leaves
 * the message alone; an error gives no configuration and a message that
 * is one NUL-terminated line within the buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = NULL;
	char err[256];
	int ret;

	memset(err, 'x', sizeof(err));
	ret = config_parse("fuzz.yaml", (const char *)data, size, &cfg, err, sizeof(err));
	if (ret == 0) {
		if (!cfg)
			abort();
		config_free(cfg);
		return 0;
	}
	if (ret > 0 || cfg)
		abort();
	if (!memchr(err, '\0', sizeof(err)) || !err[0] || strchr(err, '\n'))
		abort();
	return 0;
}
