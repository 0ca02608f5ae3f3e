// SPDX-License-Identifier: GPL-2.0
/*
 * The dlopen fixture: libfxdl.so (next to it) is not a dependency; main
 * opens it once the trace has begun.  A thread started before the load
 * and one started after it then call into the library at once, CALLS
 * times each.  Modes:
 *   load         as above, then exit 0
 *   reopen       as above, then dlclose(), dlopen() again (the
 *                constructor runs again) and one call from main, exit 0
 * With a second argument "wait" it first prints "ready" and waits for
 * SIGUSR1 (for a tracer that attaches to it running), the early thread
 * already started.
 * Every failure exits non-zero with its reason on stderr.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fx.h"

#define CALLS 3

static int (*entry)(int);
static pthread_barrier_t go, loaded;

static void *caller(void *early)
{
	/* the early thread exists while the library is loaded */
	if (early)
		pthread_barrier_wait(&loaded);
	pthread_barrier_wait(&go);
	for (int i = 0; i < CALLS; i++)
		entry(i);
	return NULL;
}

static void *open_lib(const char *dir)
{
	char path[PATH_MAX];
	void *h;

	snprintf(path, sizeof(path), "%s/libfxdl.so", dir);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fx_dl: %s\n", dlerror());
		exit(2);
	}
	*(void **)&entry = dlsym(h, "fxdl_entry");
	if (!entry) {
		fprintf(stderr, "fx_dl: %s\n", dlerror());
		exit(2);
	}
	return h;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	pthread_t early, late;
	void *h;
	ssize_t n;

	sigset_t usr1;
	int sig;

	if (argc < 2 || argc > 3 || (strcmp(argv[1], "load") && strcmp(argv[1], "reopen")) ||
	    (argc == 3 && strcmp(argv[2], "wait"))) {
		fprintf(stderr, "usage: fx_dl load|reopen [wait]\n");
		return 2;
	}
	/* blocked in every thread: sigwait() takes it */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return 2;
	dir[n] = 0;
	*strrchr(dir, '/') = 0;
	pthread_barrier_init(&go, NULL, 2);
	pthread_barrier_init(&loaded, NULL, 2);
	if (pthread_create(&early, NULL, caller, (void *)1))
		return 2;
	if (argc == 3) {
		printf("ready\n");
		fflush(stdout);
		if (sigwait(&usr1, &sig))
			return 2;
	}
	h = open_lib(dir);
	pthread_barrier_wait(&loaded);
	if (pthread_create(&late, NULL, caller, NULL))
		return 2;
	pthread_join(early, NULL);
	pthread_join(late, NULL);
	if (!strcmp(argv[1], "reopen")) {
		dlclose(h);
		h = open_lib(dir);
		entry(7);
	}
	dlclose(h);
	return 0;
}
