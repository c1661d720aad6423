/*
 * ddb_fault_i.h - the test-only fault hook of the DynamoDB client (see
 * ddb_fault.c): which requests of an open are to fail, and how.
 *
 * Internal to ddb.c.
 */
#ifndef PATHFS_DDB_FAULT_I_H
#define PATHFS_DDB_FAULT_I_H

#include <stdint.h>

enum ddb_fault_kind {
	DDB_FAULT_NONE,
	DDB_FAULT_ANSWER, /* not sent: answered with *status and *body */
	DDB_FAULT_DROP,	  /* sent, its answer lost as a dropped connection */
};

struct ddb_fault {
	int mode;	/* what PATHFS_DDB_FAULT asks (ddb_fault.c) */
	unsigned every; /* every Nth request fails; 0: the hook is off */
	uint64_t n;	/* requests seen (atomic) */
	uint64_t fired; /* faults injected (atomic) */
};

/* Reads PATHFS_DDB_FAULT (once per open); a malformed value turns the hook
 * off, said in the log. */
void ddb_fault_init(struct ddb_fault *f);

/*
 * Whether the next attempt of operation @op is to fail. DDB_FAULT_ANSWER:
 * *status and *body (static) are the answer to take instead of sending it;
 * DDB_FAULT_DROP: send it, then lose the answer. Safe from any thread.
 */
enum ddb_fault_kind ddb_fault_next(struct ddb_fault *f, const char *op,
				   long *status, const char **body);

#endif
