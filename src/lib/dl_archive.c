/* libairlock: libarchive, loaded on first use (dl_archive.h). */
#include <errno.h>
#include <pthread.h>

#include "airlock/dl.h"
#include "airlock/dl_archive.h"
#include "util.h"

struct dl_archive dl_archive;

static struct al_error load_err;
static int load_rc;
static bool tried; /* load() has run */

static void load(void)
{
#define S(f)                                          \
	{                                             \
		"archive_" #f, DL_SLOT(dl_archive, f) \
	}
	static const struct dl_sym syms[] = {
		S(entry_clear),
		S(entry_copy_pathname),
		S(entry_copy_stat),
		S(entry_copy_symlink),
		S(entry_filetype),
		S(entry_free),
		S(entry_hardlink),
		S(entry_mode),
		S(entry_new),
		S(entry_pathname),
		S(entry_perm),
		S(entry_rdevmajor),
		S(entry_rdevminor),
		S(entry_set_dev),
		S(entry_set_filetype),
		S(entry_set_gid),
		S(entry_set_gname),
		S(entry_set_hardlink),
		S(entry_set_ino),
		S(entry_set_mtime),
		S(entry_set_nlink),
		S(entry_set_pathname),
		S(entry_set_perm),
		S(entry_set_size),
		S(entry_set_symlink),
		S(entry_set_uid),
		S(entry_set_uname),
		S(entry_size),
		S(entry_size_is_set),
		S(entry_sourcepath),
		S(entry_sparse_count),
		S(entry_symlink),
		S(entry_xattr_next),
		S(entry_xattr_reset),
		S(error_string),
		S(filter_bytes),
		S(filter_code),
		S(read_data),
		S(read_data_block),
		S(read_disk_descend),
		S(read_disk_new),
		S(read_disk_open),
		S(read_disk_set_standard_lookup),
		S(read_disk_set_symlink_physical),
		S(read_free),
		S(read_new),
		S(read_next_header),
		S(read_next_header2),
		S(read_open),
		S(read_open_fd),
		S(read_open_filename),
		S(read_open_memory),
		S(read_support_filter_bzip2),
		S(read_support_filter_gzip),
		S(read_support_filter_xz),
		S(read_support_filter_zstd),
		S(read_support_format_tar),
		S(set_error),
		S(write_add_filter_zstd),
		S(write_close),
		S(write_data),
		S(write_data_block),
		S(write_disk_new),
		S(write_disk_set_options),
		S(write_finish_entry),
		S(write_free),
		S(write_header),
		S(write_new),
		S(write_open_fd),
		S(write_set_format_pax_restricted),
	};
#undef S
	load_rc = dl_load("libarchive.so.13", "libarchive13", syms, ARRAY_SIZE(syms), &load_err);
	__atomic_store_n(&tried, true, __ATOMIC_RELEASE);
}

bool dl_archive_tried(void)
{
	return __atomic_load_n(&tried, __ATOMIC_ACQUIRE);
}

int dl_load_archive(struct al_error *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, load);
	if (load_rc < 0 && err)
		*err = load_err;
	return load_rc;
}

struct archive *dl_archive_read_new(void)
{
	if (dl_load_archive(NULL) < 0) {
		errno = ELIBACC;
		return NULL;
	}
	return dl_archive.read_new();
}

struct archive *dl_archive_write_new(void)
{
	if (dl_load_archive(NULL) < 0) {
		errno = ELIBACC;
		return NULL;
	}
	return dl_archive.write_new();
}

struct archive *dl_archive_read_disk_new(void)
{
	if (dl_load_archive(NULL) < 0) {
		errno = ELIBACC;
		return NULL;
	}
	return dl_archive.read_disk_new();
}

struct archive *dl_archive_write_disk_new(void)
{
	if (dl_load_archive(NULL) < 0) {
		errno = ELIBACC;
		return NULL;
	}
	return dl_archive.write_disk_new();
}

struct archive_entry *dl_archive_entry_new(void)
{
	if (dl_load_archive(NULL) < 0) {
		errno = ELIBACC;
		return NULL;
	}
	return dl_archive.entry_new();
}
