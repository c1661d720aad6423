/*
 * progress.c - the progress bar of branch operations, drawn on stderr when
 * it is a terminal (redrawn at most every 0.1 s).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_i.h"

void ctl_progress_init(struct progress *p, struct ctx *x, const char *label,
		       uint64_t total)
{
	p->f = x->env->progress ? x->err : NULL;
	p->label = label;
	p->total = total;
	p->start = ctl_now_ns();
	p->last = 0;
	p->drawn = false;
}

void ctl_progress_draw(struct progress *p, uint64_t done, bool force)
{
	int64_t now = ctl_now_ns();
	double secs, rate;
	int pct;

	if (!p->f || (!force && now - p->last < PROGRESS_REDRAW_NS))
		return;
	p->last = now;
	secs = (double)(now - p->start) / 1e9;
	rate = secs > 0 ? (double)done / secs : 0;
	pct = p->total ? (int)(done * 100 / p->total) : 0;
	if (pct > 100)
		pct = 100;
	fprintf(p->f, "\r\033[K%s: %" PRIu64, p->label, done);
	if (p->total)
		fprintf(p->f, "/%" PRIu64 " (%d%%)", p->total, pct);
	fprintf(p->f, " %.0f/s", rate);
	if (p->total && rate > 0 && done < p->total)
		fprintf(p->f, " ETA %.0fs", (double)(p->total - done) / rate);
	fflush(p->f);
	p->drawn = true;
}

void ctl_progress_end(struct progress *p)
{
	if (p->f && p->drawn) {
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
}
