/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scan.h - the access scanner (PAGETIER_IOC_SCAN), shared by core.c and scan.c.
 */
#ifndef _PAGETIER_SCAN_H
#define _PAGETIER_SCAN_H

#include <linux/errno.h>

#include "uapi/pagetier.h"

/* Size of the first ABI version of struct pagetier_scan: the smallest a caller may pass. */
#define PT_SCAN_SIZE_V1		120

/*
 * The page-table walk reads and clears x86 accessed bits itself (see scan.c), so the
 * scanner is built on x86-64 only; elsewhere the ioctl is unknown and the feature bit
 * is not reported.
 */
#ifdef CONFIG_X86_64
#define PT_SCAN_FEATURES	PAGETIER_FEAT_SCAN
int pt_scan(struct pagetier_scan *req);
#else
#define PT_SCAN_FEATURES	0
static inline int pt_scan(struct pagetier_scan *req)
{
	return -ENOTTY;
}
#endif

#endif /* _PAGETIER_SCAN_H */
