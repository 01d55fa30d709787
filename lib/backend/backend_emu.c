// SPDX-License-Identifier: MIT
/*
 * The emulation backend: hosts the board model (emu/) in this process and
 * drives it as the kernel driver drives a real board, through the register
 * file. The engine moves data only when the caller polls or waits.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "cuda_mem.h"
#include "emu_iommu.h"
#include "fabric.h" /* emu/: this backend hosts the emulated board */
#include "fcemu.h"
#include "bridge.h" /* emu/: links to boards of other hosts */
#include "bootstrap.h"
#include "backend_emu_internal.h"

static void *emu_translate(void *ctx, uint64_t bus, uint64_t len)
{
	struct emu_board *b = ctx;

	return fc__iommu_translate(&b->mmu, bus, len);
}

/*
 * Windows the CPU does not load from: GPU memory (fc_peer_import_cuda),
 * reached through CUDA, and imported files, reached by offset.
 */
static bool emu_peer_span(void *ctx, uint64_t bus, uint64_t len)
{
	struct emu_board *b = ctx;
	void *dev_ctx;
	uint64_t off;

	return fc__iommu_dev(&b->mmu, bus, len, &dev_ctx) != 0 ||
	       fc__iommu_file(&b->mmu, bus, len, &off) >= 0;
}

/*
 * [off, off + len) of an imported file. Past its end (the file was cut
 * short after the import) is -EFAULT, as a revoked dma-buf is for the
 * driver; a write there would have grown it.
 */
static int file_move(int fd, uint64_t off, void *cpu, uint64_t len,
		     bool to_peer)
{
	struct stat st;
	ssize_t n;

	if (to_peer && (fstat(fd, &st) || (uint64_t)st.st_size < off + len))
		return -EFAULT;
	while (len) {
		n = to_peer ? pwrite(fd, cpu, len, (off_t)off) :
			      pread(fd, cpu, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EFAULT;
		cpu = (char *)cpu + n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int emu_peer_move(void *ctx, uint64_t bus, void *cpu, uint64_t len,
			 bool to_peer)
{
	struct emu_board *b = ctx;
	void *dev_ctx = NULL;
	uint64_t dptr = fc__iommu_dev(&b->mmu, bus, len, &dev_ctx), off;
	int fd;

	if (dptr)
		return fc__cuda_move(dev_ctx, dptr, cpu, len, to_peer);
	fd = fc__iommu_file(&b->mmu, bus, len, &off);
	if (fd < 0)
		return -EFAULT;
	return file_move(fd, off, cpu, len, to_peer);
}

/* Another process's GPU memory, for puts straight into it (emu/ipc.c). */
static int emu_ipc_open(void *ctx, const void *handle, uint64_t src_bus,
			uint64_t *base, void **token)
{
	struct emu_board *b = ctx;
	void *dev_ctx = NULL;
	uint64_t near = src_bus ? fc__iommu_dev(&b->mmu, src_bus, 1, &dev_ctx) :
				  0;

	return fc__cuda_ipc_open(handle, dev_ctx, near, base, token);
}

static int emu_ipc_copy(void *ctx, void *token, uint64_t dst, const void *cpu,
			uint64_t src_bus, uint64_t len)
{
	struct emu_board *b = ctx;
	void *dev_ctx = NULL;
	uint64_t src = 0;

	if (!cpu) {
		src = fc__iommu_dev(&b->mmu, src_bus, len, &dev_ctx);
		if (!src)
			return -EFAULT; /* an imported file: not CUDA's */
	}
	return fc__cuda_copy_in(token, dst, cpu, src, len);
}

static void emu_ipc_close(void *ctx, void *token, uint64_t base)
{
	fc__cuda_ipc_close(base, token);
}

static const struct fcemu_host_ops emu_host_ops = {
	.translate = emu_translate,
	.peer_span = emu_peer_span,
	.peer_move = emu_peer_move,
	.ipc_open = emu_ipc_open,
	.ipc_copy = emu_ipc_copy,
	.ipc_close = emu_ipc_close,
};

/* "", "CLUSTER" or "CLUSTER/N" */
static int parse_spec(const char *spec, struct emu_board *b)
{
	const char *slash = strchr(spec, '/');
	size_t len = slash ? (size_t)(slash - spec) : strlen(spec);
	unsigned long index = 0;
	char *end;
	size_t i;

	if (len > EMU_CLUSTER_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char c = spec[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.')
			return -EINVAL;
	}
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		index = strtoul(slash + 1, &end, 10);
		if (*end || index >= FC_MAX_NODES)
			return -EINVAL;
	}
	/*
	 * "local" is each user's own (local-UID): a name shared by all users
	 * would let the first to use it shut the others out.
	 */
	if (!len || (len == 5 && !memcmp(spec, "local", 5)))
		snprintf(b->cluster, sizeof(b->cluster), "local-%u",
			 (unsigned int)geteuid());
	else
		memcpy(b->cluster, spec, len);
	b->index = (unsigned int)index;
	return 0;
}

static int board_config(struct fcemu_config *cfg, unsigned int index)
{
	const char *env = getenv("FPGACOMM_EMU_MEM");
	uint64_t size, engines;

	fcemu_config_default(cfg);
	cfg->node_id = index;
	/*
	 * Every engine the contract allows: the fabric runs chains to
	 * different nodes on different engines (lib/fabric/fabric.c's lanes).
	 */
	engines = fc__env_size("FPGACOMM_EMU_ENGINES", FC_DMA_MAX_ENGINES);
	if (!engines || engines > FC_DMA_MAX_ENGINES)
		return -EINVAL;
	cfg->dma_engines = (uint32_t)engines;
	/* threads running the local stores' streams (default: the CPUs) */
	cfg->stream_cores = (uint32_t)fc__env_size("FPGACOMM_EMU_CORES", 0);
	if (env && *env) {
		if (fc__parse_size(env, &size) || size < EMU_MIN_MEM ||
		    size > EMU_MAX_MEM)
			return -EINVAL;
		cfg->board_mem_size = size;
	}
	return 0;
}

static int wait_attach(struct emu_board *b)
{
	uint64_t deadline = fc__now_ns() + EMU_JOIN_WAIT_MS * 1000000ull;
	unsigned int round = 0;
	int ret;

	for (;;) {
		ret = fcemu_cluster_attach(&b->fabric, b->cluster);
		if (ret != -ENOENT || fc__now_ns() >= deadline)
			return ret;
		fc__backoff(&round);
	}
}

/*
 * An object we would not attach to is in the way of every fc_open of its
 * cluster: say on stderr which one and whose, since an error code cannot.
 */
static void say_refused(const struct emu_board *b, int err)
{
	char why[256];

	if (err != -EPERM && err != -EACCES && err != -EBADMSG &&
	    err != -EPROTO)
		return;
	fcemu_cluster_explain(b->cluster, err, why, sizeof(why));
	fprintf(stderr,
		"fpgacomm: cannot join emulated cluster %s: %s "
		"(remove it, or name another cluster: "
		"FPGACOMM_DEVICE=emu:NAME/N)\n",
		b->cluster, why);
}

static int boot_put(void *arg, unsigned int node, const void *name, size_t len)
{
	(void)arg;
	return fc__boot_put(node, name, len);
}

static int boot_get(void *arg, unsigned int node, void *name, size_t *len)
{
	(void)arg;
	return fc__boot_get(node, name, len);
}

static void boot_drop(void *arg, unsigned int node)
{
	(void)arg;
	fc__boot_drop(node);
}

/* A cluster part of which lives on other hosts: our board's bridge. */
static int start_bridge(struct emu_board *b)
{
	struct fcemu_bridge_boot boot = {
		.put = boot_put,
		.get = boot_get,
		.drop = boot_drop,
		.addr = fc__boot_addr(),
	};
	int ret;

	if (!fcemu_cluster_remote(b->fabric))
		return 0;
	ret = fcemu_bridge_start(&b->bridge, b->fabric, b->index, &boot);
	if (ret)
		fprintf(stderr,
			"fpgacomm: board %u of %s cannot reach the other "
			"hosts: %s\n",
			b->index, b->cluster, strerror(-ret));
	return ret;
}

/*
 * Join the cluster named in the spec: a job's rank 0 creates it, the job's
 * other ranks wait for it, anyone else attaches if it exists and otherwise
 * stays a board on its own. Then claim our node in it.
 */
static int join_cluster(struct fc_dev *dev, struct emu_board *b)
{
	const struct fc__join *j = &dev->join;
	struct fc_topology t;
	int ret;

	if (j->job && j->create) {
		struct fcemu_faults f = { j->drop_ppm, j->corrupt_ppm };

		if (fc_topo_parse(j->topology, &t) || t.nodes != j->size)
			return -EINVAL;
		ret = fcemu_cluster_create_part(&b->fabric, b->cluster, &t, &f,
						j->remote);
		if (ret == -EEXIST)
			ret = fcemu_cluster_attach(&b->fabric, b->cluster);
	} else if (j->job) {
		ret = wait_attach(b);
	} else {
		ret = fcemu_cluster_attach(&b->fabric, b->cluster);
		if (ret == -ENOENT)
			return 0;
	}
	if (ret) {
		say_refused(b, ret);
		return ret;
	}
	ret = fcemu_cluster_claim(b->fabric, b->index);
	if (ret) {
		fcemu_cluster_detach(b->fabric);
		b->fabric = NULL;
		return ret == -EINVAL ? -ENOENT : ret;
	}
	ret = start_bridge(b);
	if (ret) {
		fcemu_cluster_release(b->fabric, b->index);
		fcemu_cluster_detach(b->fabric);
		b->fabric = NULL;
	}
	return ret;
}

/* Release our node; the last of a job's ranks to leave removes it. */
static void leave_cluster(struct fc_dev *dev, struct emu_board *b)
{
	const struct fc_topology *t;
	unsigned int n;

	if (!b->fabric)
		return;
	fcemu_cluster_release(b->fabric, b->index);
	/* after the release: it carries others' traffic until they leave */
	fcemu_bridge_stop(b->bridge);
	b->bridge = NULL;
	if (dev->join.job) {
		t = fcemu_cluster_topology(b->fabric);
		for (n = 0; n < t->nodes; n++) {
			enum fcemu_node_state s =
				fcemu_cluster_node_state(b->fabric, n);

			/* another host's boards are not in our object */
			if (s != FCEMU_NODE_EXITED && s != FCEMU_NODE_DEAD &&
			    !(fcemu_cluster_remote(b->fabric) & (1ull << n)))
				break;
		}
		if (n == t->nodes)
			fcemu_cluster_unlink(b->cluster);
	}
	fcemu_cluster_detach(b->fabric);
	b->fabric = NULL;
}

static int emu_open(struct fc_dev *dev, const char *spec)
{
	struct fcemu_config cfg;
	struct emu_board *b;
	uint64_t bus;
	unsigned int e;
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	ret = parse_spec(spec, b);
	if (ret)
		goto err_free_board;
	ret = board_config(&cfg, b->index);
	if (ret)
		goto err_free_board;
	ret = join_cluster(dev, b);
	if (ret)
		goto err_free_board;
	cfg.cluster = b->fabric;
	ret = fcemu_create(&b->emu, &cfg, &emu_host_ops, b);
	if (ret)
		goto err_leave_cluster;
	b->bar0 = fcemu_bar0(b->emu);

	b->tables = mmap(NULL, EMU_TABLES_LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->tables == MAP_FAILED) {
		ret = -ENOMEM;
		goto err_destroy_emu;
	}
	ret = fc__iommu_map(&b->mmu, b->tables, EMU_TABLES_LEN, &bus);
	if (ret)
		goto err_unmap_tables;
	b->engines = cfg.dma_engines;
	for (e = 0; e < FC_DMA_MAX_ENGINES; e++) {
		size_t off = (size_t)e * EMU_QUEUE_DEPTH * EMU_TABLE_BYTES;

		b->eng[e].tables =
			(struct fc_hw_desc *)((char *)b->tables + off);
		b->eng[e].tables_bus = bus + off;
	}
	dev->engines = b->engines;
	dev->ctrl_msgs = true;

	dev->be_priv = b;
	dev->regs = fcemu_bar0(b->emu);
	snprintf(dev->info.name, sizeof(dev->info.name), "emu:%s/%u",
		 b->cluster, b->index);
	dev->info.numa_node = numa_available() >= 0 ? 0 : -1;
	dev->info.max_xfer_len = FC_DESC_MAX_LEN;
	return 0;

err_unmap_tables:
	munmap(b->tables, EMU_TABLES_LEN);
err_destroy_emu:
	fcemu_destroy(b->emu);
err_leave_cluster:
	leave_cluster(dev, b);
err_free_board:
	fc__iommu_fini(&b->mmu);
	free(b);
	return ret;
}

/* Rounds of progress a closing board gives owed ABORTs to find room. */
#define EMU_CLOSE_ROUNDS 1000

static void emu_close(struct fc_dev *dev)
{
	struct emu_board *b = board_of(dev);
	unsigned int i;

	/* fc_close() reset the engine: a message it cut off is told. */
	for (i = 0; i < EMU_CLOSE_ROUNDS && !fcemu_flush_aborts(b->emu); i++)
		fcemu_progress(b->emu, EMU_STEP_BYTES);
	munmap(b->tables, EMU_TABLES_LEN);
	fcemu_destroy(b->emu);
	leave_cluster(dev, b);
	fc__iommu_fini(&b->mmu);
	free(b);
}

static int emu_reg_read(struct fc_dev *dev, uint32_t off, uint32_t *val)
{
	*val = rd(board_of(dev), off);
	return 0;
}

static int emu_reg_write(struct fc_dev *dev, uint32_t off, uint32_t val)
{
	wr(board_of(dev), off, val);
	return 0;
}

/* Is every page of [addr, addr+len) mapped? The kernel would fail to pin. */
static bool range_mapped(const void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	unsigned char vec[4096];

	/* mincore() fails with ENOMEM on any hole; walk in bounded pieces. */
	while (start < end) {
		uintptr_t n = (end - start) / page;

		if (n > sizeof(vec))
			n = sizeof(vec);
		if (mincore((void *)start, n * page, vec))
			return false;
		start += n * page;
	}
	return true;
}

static int emu_mem_map(struct fc_dev *dev, struct fc__mem *mem)
{
	if (!range_mapped(mem->pub.addr, mem->pub.len))
		return -EFAULT;
	return fc__iommu_map(&board_of(dev)->mmu, mem->pub.addr, mem->pub.len,
			     &mem->handle);
}

static void emu_mem_unmap(struct fc_dev *dev, struct fc__mem *mem)
{
	struct emu_board *b = board_of(dev);

	uint64_t off;
	int fd = fc__iommu_file(&b->mmu, mem->handle, 1, &off);

	if (fd >= 0)
		close(fd);
	else if (mem->peer && !mem->device)
		munmap(fc__iommu_translate(&b->mmu, mem->handle, 1),
		       mem->map_len);
	fc__iommu_unmap(&b->mmu, mem->handle);
	if (b->emu)
		fcemu_iotlb_flush(b->emu);
}

/*
 * A regular file (a memfd, say): the engine reads and writes it by offset
 * through a descriptor of its own, so that whoever else holds the file
 * may cut it short without crashing us (a mapping would take SIGBUS).
 */
static int import_file(struct emu_board *b, struct fc__mem *mem, int fd,
		       uint64_t off, size_t len)
{
	int flags = fcntl(fd, F_GETFL), own, ret;

	if (flags < 0)
		return -errno;
	if ((flags & O_ACCMODE) != O_RDWR)
		return -EACCES; /* as mmap would say */
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	ret = fc__iommu_map_file(&b->mmu, own, off, len, &mem->handle);
	if (ret) {
		close(own);
		return ret;
	}
	mem->map_len = len;
	return 0;
}

/*
 * Peer memory of an emulated board: a regular file (import_file), or any
 * other file it can map shared (a dma-buf with mmap), which the board then
 * reaches like registered memory. [off, off + peer_off + len) of @fd;
 * @off page-aligned; the range must lie inside the file (an empty file
 * has none).
 */
static int emu_peer_import(struct fc_dev *dev, struct fc__mem *mem, int fd,
			   uint64_t off)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (mem->peer_off + mem->pub.len + page - 1) & ~(page - 1);
	size_t end = mem->peer_off + mem->pub.len;
	struct stat st;
	void *p;
	int ret;

	if (fstat(fd, &st))
		return -errno;
	if ((S_ISREG(st.st_mode) || st.st_size > 0) &&
	    (off >= (uint64_t)st.st_size || end > (uint64_t)st.st_size - off))
		return -ERANGE;
	if (S_ISREG(st.st_mode))
		return import_file(board_of(dev), mem, fd, off, end);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED)
		return errno == ENODEV ? -EINVAL : -errno; /* not mappable */
	ret = fc__iommu_map(&board_of(dev)->mmu, p, len, &mem->handle);
	if (ret) {
		munmap(p, len);
		return ret;
	}
	mem->map_len = len;
	return 0;
}

/* Device memory (a GPU's), moved by the engine through emu_peer_move. */
static int emu_peer_import_dev(struct fc_dev *dev, struct fc__mem *mem,
			       uint64_t dev_addr)
{
	return fc__iommu_map_dev(&board_of(dev)->mmu, dev_addr, mem->dev_ctx,
				 mem->pub.len, &mem->handle);
}

/* ---- The fabric ---- */

/* A step while a chain runs: its end looked for before and after. */
static __attribute__((noinline)) int progress_reaping(struct emu_board *b,
						      uint64_t *moved)
{
	fc__emu_reap(b);
	*moved = fcemu_progress(b->emu, EMU_STEP_BYTES);
	if (b->running)
		fc__emu_reap(b);
	return 0;
}

static int emu_progress(struct fc_dev *dev, uint64_t *moved)
{
	struct emu_board *b = board_of(dev);

	/* a chain's end is looked for only where one runs (no call else) */
	if (b->running)
		return progress_reaping(b, moved);
	*moved = fcemu_progress(b->emu, EMU_STEP_BYTES);
	return 0;
}

static int emu_world(struct fc_dev *dev, struct fc_world *w)
{
	struct emu_board *b = board_of(dev);
	const struct fc_topology *t;

	if (!b->fabric)
		return -ENOTCONN;
	t = fcemu_cluster_topology(b->fabric);
	memset(w, 0, sizeof(*w));
	w->rank = b->index;
	w->size = t->nodes;
	w->node_id = b->index;
	return fc_topo_format(t, w->topology, sizeof(w->topology));
}

static int emu_hops(struct fc_dev *dev, uint32_t node, uint32_t *hops)
{
	struct emu_board *b = board_of(dev);

	if (!b->fabric)
		return -ENOTCONN;
	*hops = fc_topo_hops(fcemu_cluster_topology(b->fabric), b->index, node);
	return 0;
}

static int emu_sim_time(struct fc_dev *dev, uint64_t *ps)
{
	return fcemu_sim_time_ps(board_of(dev)->emu, ps);
}

/* The PIO window is the board's BAR, mapped here: the library writes the
 * packets in place, then TAIL (a trapped write): the board takes them. */
static struct fc_hw_pkt *emu_pio_room(struct fc_dev *dev, unsigned int n,
				      uint32_t *tail)
{
	struct emu_board *b = board_of(dev);

	*tail = rd(b, FC_PIO_TAIL);
	if (FC_PIO_SLOTS - (*tail - rd(b, FC_PIO_HEAD)) < n)
		return NULL;
	return (struct fc_hw_pkt *)((uint8_t *)b->bar0 + FC_PIO_WINDOW);
}

static uint32_t emu_pio_post(struct fc_dev *dev, uint32_t end)
{
	struct emu_board *b = board_of(dev);

	wr(b, FC_PIO_TAIL, end);
	return rd(b, FC_PIO_HEAD);
}

static uint32_t emu_pio_head(struct fc_dev *dev)
{
	return rd(board_of(dev), FC_PIO_HEAD);
}

/* One more look at the board, once counted as a sleeper. */
static bool emu_news(void *arg)
{
	struct fc_dev *dev = arg;
	bool news;

	fc__lock(&dev->lock);
	news = fcemu_progress_news(board_of(dev)->emu, EMU_STEP_BYTES);
	fc__unlock(&dev->lock);
	return news;
}

static void emu_waiting(struct fc_dev *dev)
{
	fcemu_host_waits(board_of(dev)->emu);
}

/* The cluster's bell wakes us when packets come for our board. */
static void emu_idle(struct fc_dev *dev, uint64_t max_ns)
{
	struct emu_board *b = board_of(dev);
	struct timespec ts;

	/* a reply from another host is due: woken by its arrival itself,
	 * not through the bridge's thread (FCEMU_BRIDGE_DUE_NS at most) */
	if (fcemu_bridge_wait_reply(b->bridge, max_ns))
		return;
	if (b->fabric) {
		fcemu_cluster_wait(b->fabric, b->index, max_ns, emu_news, dev);
		return;
	}
	ts.tv_sec = 0;
	ts.tv_nsec = (long)max_ns;
	nanosleep(&ts, NULL);
}

static int emu_node_state(struct fc_dev *dev, uint32_t node)
{
	struct emu_board *b = board_of(dev);

	if (!b->fabric)
		return -ENOTCONN;
	switch (fcemu_cluster_node_state(b->fabric, node)) {
	case FCEMU_NODE_ALIVE:
		return FC__NODE_ALIVE;
	case FCEMU_NODE_EXITED:
		return FC__NODE_EXITED;
	case FCEMU_NODE_DEAD:
		return FC__NODE_DEAD;
	default:
		return FC__NODE_FREE;
	}
}

static int emu_kernel_register(struct fc_dev *dev, uint32_t id, fc_kernel_fn fn,
			       void *ctx)
{
	return fcemu_kernel_register(board_of(dev)->emu, id, fn, ctx);
}

static void emu_stream_sleep(struct fc_dev *dev, uint32_t seen, uint64_t max_ns)
{
	fcemu_stream_sleep(board_of(dev)->emu, seen, max_ns);
}

static int emu_mem_bus(struct fc_dev *dev, struct fc__mem *mem, uint64_t *bus)
{
	*bus = mem->handle + mem->peer_off;
	return 0;
}

/*
 * GPU memory given a window entry: its CUDA IPC handle for the other
 * boards' engines (emu/ipc.c). Memory CUDA cannot name to another process
 * (opened from a handle itself, or of no context) is not published; puts
 * into it go through this board.
 */
static void emu_pw_publish(struct fc_dev *dev, struct fc__mem *mem,
			   unsigned int entry, uint16_t gen)
{
	struct emu_board *b = board_of(dev);
	struct fc_cuda_ipc ipc;
	void *dev_ctx = NULL;
	uint64_t dptr = 0;

	if (mem->device && !mem->ipc_base)
		dptr = fc__iommu_dev(&b->mmu, mem->handle + mem->peer_off,
				     mem->pub.len, &dev_ctx);
	if (dptr && !fc_cuda_ipc_export(dptr, &ipc))
		fcemu_pw_publish(b->emu, entry, gen, ipc.handle, ipc.off);
	else
		fcemu_pw_publish(b->emu, entry, gen, NULL, 0);
}

const struct fc__backend fc__emu_backend = {
	.name = "emu",
	.open = emu_open,
	.close = emu_close,
	.reg_read = emu_reg_read,
	.reg_write = emu_reg_write,
	.mem_map = emu_mem_map,
	.mem_unmap = emu_mem_unmap,
	.submit = fc__emu_submit,
	.poll = fc__emu_poll,
	.reset = fc__emu_reset,
	.progress = emu_progress,
	.world = emu_world,
	.hops = emu_hops,
	.sim_time = emu_sim_time,
	.node_state = emu_node_state,
	.mem_bus = emu_mem_bus,
	.rendezvous = true,
	.idle = emu_idle,
	.waiting = emu_waiting,
	.pio_room = emu_pio_room,
	.pio_post = emu_pio_post,
	.pio_head = emu_pio_head,
	.peer_import = emu_peer_import,
	.kernel_register = emu_kernel_register,
	.stream_sleep = emu_stream_sleep,
	.peer_import_dev = emu_peer_import_dev,
	.peer_window = true,
	.pw_publish = emu_pw_publish,
};
