/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol pagetierctl speaks over the daemon's unix socket: one request line,
 * one answer. Requests: "status", "status json", "containers", "prefetch NAME" (root only).
 * Pure apart from the manager it asks: unit tested.
 */
#ifndef PAGETIER_CTL_H
#define PAGETIER_CTL_H

#include <stdio.h>
#include <sys/types.h>

#include "manager.h"

/* Answers @req (one line, its newline ignored) from a peer of uid @peer_uid into @out. */
void pt_ctl_answer(struct pt_manager *m, const char *req, uid_t peer_uid, FILE *out);

#endif
