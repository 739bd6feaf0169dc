/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_AGENT_CONFIG_INTERNAL_H
#define CGPERF_AGENT_CONFIG_INTERNAL_H

/* Sections of the configuration parsed outside config.c (internal to
 * agent/cmd/config*.c). */

#include <yaml.h>

#include "agent/cmd/config.h"
#include "lib/ydoc.h"

extern const char *const config_identity_keys[];
void config_identity_defaults(struct config *c);
void config_identity_free(struct config *c);
int config_identity_parse(struct ydoc *x, const yaml_node_t *root, struct config *c);

#endif
