/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_LIB_VERSION_H
#define CGPERF_LIB_VERSION_H

/* The version both programs print (--version). The build may set it
 * (-DCGPERF_VERSION=...). */
#ifndef CGPERF_VERSION
#define CGPERF_VERSION "0.1.0"
#endif

#endif
