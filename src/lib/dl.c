/* dl: a shared library's functions, loaded on first use (dl.h). */
#include <dlfcn.h>

#include "airlock/dl.h"

int dl_load(const char *lib, const char *package, const struct dl_sym *syms, size_t n,
	    struct al_error *err)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return al_fail(err, AL_EIO, 0, "cannot load %s (Debian package %s): %s", lib,
			       package, dlerror());
	for (size_t i = 0; i < n; i++) {
		void *p = dlsym(h, syms[i].name);
		if (!p) {
			for (size_t j = 0; j < i; j++)
				*syms[j].slot = NULL;
			dlclose(h);
			return al_fail(err, AL_EIO, 0, "%s has no %s", lib, syms[i].name);
		}
		*syms[i].slot = p;
	}
	return 0; /* the handle stays open for the process's life */
}
