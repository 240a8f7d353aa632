/* libairlock: libarchive, loaded on first use (include/airlock/dl.h).
 * libarchive brings libxml2, ICU, libstdc++, nettle, liblzma, liblz4,
 * libbz2, zlib and libacl with it: 11 shared libraries and 4.4 M
 * instructions of relocation on every start, although only tar work
 * (bundles, image imports, the microVM's streams, uploads) needs it.
 * Include this instead of <archive.h>; call the library through the table
 * (dl_archive.read_next_header(…)). Every archive and entry comes from
 * one of the constructors below, which load the library first: the table
 * is filled before any other call can be made. Types and constants are
 * the library's own. */
#ifndef AIRLOCK_DL_ARCHIVE_H
#define AIRLOCK_DL_ARCHIVE_H

#include <stdbool.h>

#include <archive.h>
#include <archive_entry.h>

#include "airlock/error.h"

struct dl_archive {
	__typeof__(archive_entry_clear) *entry_clear;
	__typeof__(archive_entry_copy_pathname) *entry_copy_pathname;
	__typeof__(archive_entry_copy_stat) *entry_copy_stat;
	__typeof__(archive_entry_copy_symlink) *entry_copy_symlink;
	__typeof__(archive_entry_filetype) *entry_filetype;
	__typeof__(archive_entry_free) *entry_free;
	__typeof__(archive_entry_hardlink) *entry_hardlink;
	__typeof__(archive_entry_mode) *entry_mode;
	__typeof__(archive_entry_new) *entry_new;
	__typeof__(archive_entry_pathname) *entry_pathname;
	__typeof__(archive_entry_perm) *entry_perm;
	__typeof__(archive_entry_rdevmajor) *entry_rdevmajor;
	__typeof__(archive_entry_rdevminor) *entry_rdevminor;
	__typeof__(archive_entry_set_dev) *entry_set_dev;
	__typeof__(archive_entry_set_filetype) *entry_set_filetype;
	__typeof__(archive_entry_set_gid) *entry_set_gid;
	__typeof__(archive_entry_set_gname) *entry_set_gname;
	__typeof__(archive_entry_set_hardlink) *entry_set_hardlink;
	__typeof__(archive_entry_set_ino) *entry_set_ino;
	__typeof__(archive_entry_set_mtime) *entry_set_mtime;
	__typeof__(archive_entry_set_nlink) *entry_set_nlink;
	__typeof__(archive_entry_set_pathname) *entry_set_pathname;
	__typeof__(archive_entry_set_perm) *entry_set_perm;
	__typeof__(archive_entry_set_size) *entry_set_size;
	__typeof__(archive_entry_set_symlink) *entry_set_symlink;
	__typeof__(archive_entry_set_uid) *entry_set_uid;
	__typeof__(archive_entry_set_uname) *entry_set_uname;
	__typeof__(archive_entry_size) *entry_size;
	__typeof__(archive_entry_size_is_set) *entry_size_is_set;
	__typeof__(archive_entry_sourcepath) *entry_sourcepath;
	__typeof__(archive_entry_sparse_count) *entry_sparse_count;
	__typeof__(archive_entry_symlink) *entry_symlink;
	__typeof__(archive_entry_xattr_next) *entry_xattr_next;
	__typeof__(archive_entry_xattr_reset) *entry_xattr_reset;
	__typeof__(archive_error_string) *error_string;
	__typeof__(archive_filter_bytes) *filter_bytes;
	__typeof__(archive_filter_code) *filter_code;
	__typeof__(archive_read_data) *read_data;
	__typeof__(archive_read_data_block) *read_data_block;
	__typeof__(archive_read_disk_descend) *read_disk_descend;
	__typeof__(archive_read_disk_new) *read_disk_new;
	__typeof__(archive_read_disk_open) *read_disk_open;
	__typeof__(archive_read_disk_set_standard_lookup) *read_disk_set_standard_lookup;
	__typeof__(archive_read_disk_set_symlink_physical) *read_disk_set_symlink_physical;
	__typeof__(archive_read_free) *read_free;
	__typeof__(archive_read_new) *read_new;
	__typeof__(archive_read_next_header) *read_next_header;
	__typeof__(archive_read_next_header2) *read_next_header2;
	__typeof__(archive_read_open) *read_open;
	__typeof__(archive_read_open_fd) *read_open_fd;
	__typeof__(archive_read_open_filename) *read_open_filename;
	__typeof__(archive_read_open_memory) *read_open_memory;
	__typeof__(archive_read_support_filter_bzip2) *read_support_filter_bzip2;
	__typeof__(archive_read_support_filter_gzip) *read_support_filter_gzip;
	__typeof__(archive_read_support_filter_xz) *read_support_filter_xz;
	__typeof__(archive_read_support_filter_zstd) *read_support_filter_zstd;
	__typeof__(archive_read_support_format_tar) *read_support_format_tar;
	__typeof__(archive_set_error) *set_error;
	__typeof__(archive_write_add_filter_zstd) *write_add_filter_zstd;
	__typeof__(archive_write_close) *write_close;
	__typeof__(archive_write_data) *write_data;
	__typeof__(archive_write_data_block) *write_data_block;
	__typeof__(archive_write_disk_new) *write_disk_new;
	__typeof__(archive_write_disk_set_options) *write_disk_set_options;
	__typeof__(archive_write_finish_entry) *write_finish_entry;
	__typeof__(archive_write_free) *write_free;
	__typeof__(archive_write_header) *write_header;
	__typeof__(archive_write_new) *write_new;
	__typeof__(archive_write_open_fd) *write_open_fd;
	__typeof__(archive_write_set_format_pax_restricted) *write_set_format_pax_restricted;
};
extern struct dl_archive dl_archive;
/* Load libarchive once per process (thread-safe); an error names the
 * library and its Debian package. */
int dl_load_archive(struct al_error *err);
/* Has a load been tried already (successful or not)? */
bool dl_archive_tried(void);

/* The constructors: NULL if the library cannot be loaded (errno ELIBACC)
 * or memory is short. */
struct archive *dl_archive_read_new(void);
struct archive *dl_archive_write_new(void);
struct archive *dl_archive_read_disk_new(void);
struct archive *dl_archive_write_disk_new(void);
struct archive_entry *dl_archive_entry_new(void);

#endif
