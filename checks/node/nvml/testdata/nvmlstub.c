/*
 * nvmlstub.c: a stand-in for libnvidia-ml.so.1, for the NVML adapter's tests. Written for
 * nodecheck; the signatures are those of nvml.h (go-nvml v0.13.4-1, pkg/nvml/nvml.h).
 *
 * NVMLSTUB_INIT is the nvmlReturn_t that nvmlInit returns: 9 (NVML_ERROR_DRIVER_NOT_LOADED)
 * when unset, as on a node whose library is installed but whose kernel module is not
 * loaded. With 0 the stub has two GPUs: GPU 0 answers the basic reads, GPU 1 is lost
 * (NVML_ERROR_GPU_IS_LOST).
 *
 * GPU 0's health, as a healthy Hopper answers it: ECC on (and on after reset) with no
 * errors, no remapped rows, no page retirement (NVML_ERROR_NOT_SUPPORTED: Ampere and later
 * remap rows instead), 4 NVLinks of which link 2 is inactive (link 4 and later:
 * NVML_ERROR_INVALID_ARGUMENT), 80 GiB of framebuffer with 512 MiB reserved and 1 GiB used,
 * and one compute process, PID 4242, holding 500 MiB.
 *
 * GPU 0's signals: serial 1650124031592, persistence mode on, 7 PCIe replays, idle clocks,
 * 30 C with the absolute thresholds of an H100 (shutdown 92, slowdown 89, GPU max 87, memory
 * max 95) and HBM at 36 C (field NVML_FI_DEV_MEMORY_TEMP), power limit 700 W (its default)
 * drawing 100.89 W, recovery action NONE (field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), and on
 * each active NVLink l: l flow-control CRC errors, 2 replays, 0 recoveries, and no data CRC
 * counter (NVML_ERROR_NOT_SUPPORTED).
 *
 * Built with -DNVMLSTUB_OLD it is a driver from before Ampere support (R450): no
 * nvmlDeviceGetRemappedRows, no nvmlDeviceGetMemoryInfo_v2, only the unversioned
 * nvmlDeviceGetComputeRunningProcesses with the v1 struct, only the throttle-reasons name
 * of the clocks call (nvmlDeviceGetCurrentClocksEventReasons came with 535), and no GPU
 * recovery action field (550): the field answers NVML_ERROR_NOT_SUPPORTED, and the older
 * reset status says a reset is required (NVML_FI_DEV_RESET_STATUS 1,
 * NVML_FI_DEV_DRAIN_AND_RESET_STATUS 0; a current driver answers both 0). A caller that
 * calls a missing function dies in the dynamic linker.
 *
 * By default it has no fabric functions, as drivers before them: a caller that calls one
 * anyway dies in the dynamic linker, which is the failure the adapter must avoid. Built
 * with -DNVMLSTUB_FABRIC_V it has nvmlDeviceGetGpuFabricInfoV as a driver that knows the
 * v2 struct but not v3 (GPU 0: COMPLETED, SUCCESS, health mask 0xaa: every condition
 * false, as a healthy GB200 reads in NVIDIA/nccl#2186); with -DNVMLSTUB_FABRIC_V3 as one
 * that knows v3 (GPU 0: COMPLETED, SUCCESS, health mask 0x9a: route unhealthy, the other
 * conditions false; summary UNHEALTHY); with -DNVMLSTUB_FABRIC_V1 it has only the
 * unversioned nvmlDeviceGetGpuFabricInfo (GPU 0: IN_PROGRESS).
 *
 * Every call is counted per name; NVMLSTUB_LOG names a file that gets one line per call,
 * so a test can check that nothing but nvmlInit ran after a failed init.
 *
 * Build: cc -shared -fPIC [-DNVMLSTUB_FABRIC_V | -DNVMLSTUB_FABRIC_V3 | -DNVMLSTUB_FABRIC_V1] [-DNVMLSTUB_OLD] -o libnvidia-ml.so.1 nvmlstub.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef int nvmlEnableState_t; /* NVML_FEATURE_DISABLED 0, NVML_FEATURE_ENABLED 1 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

static int initialized;

static void logcall(const char *name) {
	const char *path = getenv("NVMLSTUB_LOG");
	if (path == NULL) return;
	FILE *f = fopen(path, "a");
	if (f == NULL) return;
	fprintf(f, "%s\n", name);
	fclose(f);
}

static nvmlReturn_t init(const char *name) {
	logcall(name);
	const char *v = getenv("NVMLSTUB_INIT");
	nvmlReturn_t r = v ? atoi(v) : 9;
	if (r == 0) initialized = 1;
	return r;
}

nvmlReturn_t nvmlInit(void) { return init("nvmlInit"); }
nvmlReturn_t nvmlInit_v2(void) { return init("nvmlInit_v2"); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return init("nvmlInitWithFlags"); }

nvmlReturn_t nvmlShutdown(void) {
	logcall("nvmlShutdown");
	if (!initialized) return 1; /* NVML_ERROR_UNINITIALIZED */
	initialized = 0;
	return 0;
}

const char *nvmlErrorString(nvmlReturn_t r) {
	logcall("nvmlErrorString");
	return r == 9 ? "Driver Not Loaded" : "Stub Error";
}

#define NEED_INIT(name) do { logcall(name); if (!initialized) return 1; } while (0)

static nvmlReturn_t copystr(char *dst, unsigned int len, const char *src) {
	if (strlen(src) + 1 > len) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	strcpy(dst, src);
	return 0;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
	NEED_INIT("nvmlSystemGetDriverVersion");
	return copystr(version, length, "999.99.99");
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
	NEED_INIT("nvmlSystemGetCudaDriverVersion");
	*v = 12040;
	return 0;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
	NEED_INIT("nvmlSystemGetCudaDriverVersion_v2");
	*v = 12040;
	return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
	NEED_INIT("nvmlDeviceGetCount_v2");
	*count = 2;
	return 0;
}

static struct nvmlDevice_st { int index; } gpu0 = {0};

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
	NEED_INIT("nvmlDeviceGetHandleByIndex_v2");
	if (index == 0) { *device = &gpu0; return 0; }
	return 15; /* NVML_ERROR_GPU_IS_LOST */
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor) {
	NEED_INIT("nvmlDeviceGetMinorNumber");
	*minor = (unsigned int)d->index;
	return 0;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
	(void)d;
	NEED_INIT("nvmlDeviceGetUUID");
	return copystr(uuid, length, "GPU-5705e5b0-0000-4000-8000-000000000000");
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
	(void)d;
	NEED_INIT("nvmlDeviceGetName");
	return copystr(name, length, "NVIDIA Stub GPU");
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
	(void)d;
	NEED_INIT("nvmlDeviceGetPciInfo_v3");
	memset(pci, 0, sizeof *pci);
	strcpy(pci->busIdLegacy, "0000:19:00.0");
	strcpy(pci->busId, "00000000:19:00.0");
	pci->bus = 0x19;
	pci->pciDeviceId = 0x233010de;
	return 0;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) {
	(void)d;
	NEED_INIT("nvmlDeviceGetCurrPcieLinkWidth");
	*v = 8;
	return 0;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) {
	(void)d;
	NEED_INIT("nvmlDeviceGetMaxPcieLinkWidth");
	*v = 16;
	return 0;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) {
	(void)d;
	NEED_INIT("nvmlDeviceGetCurrPcieLinkGeneration");
	*v = 4;
	return 0;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) {
	(void)d;
	NEED_INIT("nvmlDeviceGetMaxPcieLinkGeneration");
	*v = 5;
	return 0;
}

#ifdef NVMLSTUB_FABRIC_V
/* nvmlGpuFabricInfo_v2_t; nvml.h's nvmlGpuFabricInfo_v2 is NVML_STRUCT_VERSION(GpuFabricInfo, 2):
 * sizeof in the low 24 bits, the version above. */
typedef struct {
	unsigned int version;
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
	unsigned int healthMask;
} fabricInfoV2;

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, fabricInfoV2 *info) {
	(void)d;
	NEED_INIT("nvmlDeviceGetGpuFabricInfoV");
	if (info->version != (sizeof(fabricInfoV2) | (2u << 24)))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH: this "driver" knows v2 only */
	info->status = 0;
	info->state = 3; /* NVML_GPU_FABRIC_STATE_COMPLETED */
	info->healthMask = 0xaa;
	return 0;
}
#endif

#ifdef NVMLSTUB_FABRIC_V3
/* nvmlGpuFabricInfo_v3_t (nvmlGpuFabricInfoV_t), version NVML_STRUCT_VERSION(GpuFabricInfo, 3). */
typedef struct {
	unsigned int version;
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
	unsigned int healthMask;
	unsigned char healthSummary;
} fabricInfoV3;

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, fabricInfoV3 *info) {
	(void)d;
	NEED_INIT("nvmlDeviceGetGpuFabricInfoV");
	if (info->version != (sizeof(fabricInfoV3) | (3u << 24)))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	info->status = 0;
	info->state = 3;         /* NVML_GPU_FABRIC_STATE_COMPLETED */
	info->healthMask = 0x9a; /* route unhealthy TRUE (1 << 4); degraded bw, route recovery, access timeout FALSE */
	info->healthSummary = 2; /* NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY */
	return 0;
}
#endif

#ifdef NVMLSTUB_FABRIC_V1
/* nvmlGpuFabricInfo_t */
typedef struct {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
} fabricInfoV1;

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, fabricInfoV1 *info) {
	(void)d;
	NEED_INIT("nvmlDeviceGetGpuFabricInfo");
	info->status = 0;
	info->state = 2; /* NVML_GPU_FABRIC_STATE_IN_PROGRESS */
	return 0;
}
#endif

/* Health reads. Every function below is one a real driver of its kind exports. */

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, nvmlEnableState_t *current, nvmlEnableState_t *pending) {
	(void)d;
	NEED_INIT("nvmlDeviceGetEccMode");
	*current = 1;
	*pending = 1;
	return 0;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int errorType, int counterType, unsigned long long *count) {
	(void)d;
	NEED_INIT("nvmlDeviceGetTotalEccErrors");
	if (errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	*count = 0;
	return 0;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *pageCount, unsigned long long *addresses) {
	(void)d; (void)cause; (void)pageCount; (void)addresses;
	NEED_INIT("nvmlDeviceGetRetiredPages");
	return 3; /* NVML_ERROR_NOT_SUPPORTED */
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, nvmlEnableState_t *isPending) {
	(void)d; (void)isPending;
	NEED_INIT("nvmlDeviceGetRetiredPagesPendingStatus");
	return 3; /* NVML_ERROR_NOT_SUPPORTED */
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, nvmlEnableState_t *isActive) {
	(void)d;
	NEED_INIT("nvmlDeviceGetNvLinkState");
	if (link >= 4) return 2; /* NVML_ERROR_INVALID_ARGUMENT: past this GPU's links */
	*isActive = link != 2;
	return 0;
}

#define MiB (1024ull * 1024)

/* nvmlMemory_t */
typedef struct {
	unsigned long long total, free, used;
} memoryV1;

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, memoryV1 *m) {
	(void)d;
	NEED_INIT("nvmlDeviceGetMemoryInfo");
	m->total = 81920 * MiB;
	m->used = (512 + 1024) * MiB; /* v1's used includes what the driver reserves */
	m->free = m->total - m->used;
	return 0;
}

#ifndef NVMLSTUB_OLD
/* nvmlMemory_v2_t; its version is NVML_STRUCT_VERSION(Memory, 2). */
typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} memoryV2;

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, memoryV2 *m) {
	(void)d;
	NEED_INIT("nvmlDeviceGetMemoryInfo_v2");
	if (m->version != (sizeof(memoryV2) | (2u << 24)))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	m->total = 81920 * MiB;
	m->reserved = 512 * MiB;
	m->used = 1024 * MiB;
	m->free = m->total - m->reserved - m->used;
	return 0;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corrRows, unsigned int *uncRows,
                                       unsigned int *isPending, unsigned int *failureOccurred) {
	(void)d;
	NEED_INIT("nvmlDeviceGetRemappedRows");
	*corrRows = *uncRows = *isPending = *failureOccurred = 0;
	return 0;
}

/* nvmlProcessInfo_t (nvmlProcessInfo_v2_t), as nvmlDeviceGetComputeRunningProcesses_v3 fills it */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} processInfo;

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *infoCount, processInfo *infos) {
	(void)d;
	NEED_INIT("nvmlDeviceGetComputeRunningProcesses_v3");
	if (*infoCount < 1) {
		*infoCount = 1;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	*infoCount = 1;
	infos[0].pid = 4242;
	infos[0].usedGpuMemory = 500 * MiB;
	infos[0].gpuInstanceId = infos[0].computeInstanceId = 0xFFFFFFFF; /* no MIG */
	return 0;
}
#else
/* nvmlProcessInfo_v1_t, as the unversioned nvmlDeviceGetComputeRunningProcesses fills it */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} processInfoV1;

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *infoCount, processInfoV1 *infos) {
	(void)d;
	NEED_INIT("nvmlDeviceGetComputeRunningProcesses");
	if (*infoCount < 1) {
		*infoCount = 1;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	*infoCount = 1;
	infos[0].pid = 4242;
	infos[0].usedGpuMemory = 500 * MiB;
	return 0;
}
#endif

/* Signals (issue 14). */

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned int length) {
	(void)d;
	NEED_INIT("nvmlDeviceGetSerial");
	return copystr(serial, length, "1650124031592");
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *mode) {
	(void)d;
	NEED_INIT("nvmlDeviceGetPersistenceMode");
	*mode = 1;
	return 0;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *value) {
	(void)d;
	NEED_INIT("nvmlDeviceGetPcieReplayCounter");
	*value = 7;
	return 0;
}

#define CLOCKS_IDLE 0x1ull

#ifndef NVMLSTUB_OLD
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
	(void)d;
	NEED_INIT("nvmlDeviceGetCurrentClocksEventReasons");
	*reasons = CLOCKS_IDLE;
	return 0;
}
#endif

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *reasons) {
	(void)d;
	NEED_INIT("nvmlDeviceGetCurrentClocksThrottleReasons");
	*reasons = CLOCKS_IDLE;
	return 0;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp) {
	(void)d;
	NEED_INIT("nvmlDeviceGetTemperature");
	if (sensor != 0) return 2; /* NVML_TEMPERATURE_GPU only */
	*temp = 30;
	return 0;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, int kind, unsigned int *temp) {
	(void)d;
	NEED_INIT("nvmlDeviceGetTemperatureThreshold");
	static const unsigned int thresholds[] = {92, 89, 95, 87}; /* SHUTDOWN, SLOWDOWN, MEM_MAX, GPU_MAX */
	if (kind < 0 || kind > 3) return 3; /* NVML_ERROR_NOT_SUPPORTED */
	*temp = thresholds[kind];
	return 0;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
	(void)d;
	NEED_INIT("nvmlDeviceGetEnforcedPowerLimit");
	*mw = 700000;
	return 0;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *mw) {
	(void)d;
	NEED_INIT("nvmlDeviceGetPowerManagementDefaultLimit");
	*mw = 700000;
	return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
	(void)d;
	NEED_INIT("nvmlDeviceGetPowerUsage");
	*mw = 100890;
	return 0;
}

/* nvmlFieldValue_t */
typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	union { double d; unsigned int ui; unsigned long ul; unsigned long long ull; long long sll; int si; unsigned short us; } value;
} fieldValue;

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, fieldValue *values) {
	(void)d;
	NEED_INIT("nvmlDeviceGetFieldValues");
	for (int i = 0; i < count; i++) {
		fieldValue *v = &values[i];
		v->valueType = 1; /* NVML_VALUE_TYPE_UNSIGNED_INT */
		v->nvmlReturn = 0;
		switch (v->fieldId) {
		case 82: /* NVML_FI_DEV_MEMORY_TEMP */
			v->value.ui = 36;
			break;
#ifndef NVMLSTUB_OLD
		case 230: /* NVML_FI_DEV_GET_GPU_RECOVERY_ACTION */
			v->value.ui = 0; /* NVML_GPU_RECOVERY_ACTION_NONE */
			break;
		case 226: /* NVML_FI_DEV_RESET_STATUS */
			v->value.ui = 0;
			break;
#else
		case 226:
			v->value.ui = 1; /* a reset is required */
			break;
#endif
		case 227: /* NVML_FI_DEV_DRAIN_AND_RESET_STATUS */
			v->value.ui = 0;
			break;
		default:
			v->nvmlReturn = 3; /* NVML_ERROR_NOT_SUPPORTED */
		}
	}
	return 0;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter, unsigned long long *value) {
	(void)d;
	NEED_INIT("nvmlDeviceGetNvLinkErrorCounter");
	if (link >= 4) return 2;
	switch (counter) {
	case 0: *value = 2; return 0;    /* NVML_NVLINK_ERROR_DL_REPLAY */
	case 1: *value = 0; return 0;    /* NVML_NVLINK_ERROR_DL_RECOVERY */
	case 2: *value = link; return 0; /* NVML_NVLINK_ERROR_DL_CRC_FLIT */
	}
	return 3; /* NVML_ERROR_NOT_SUPPORTED: no data CRC counter */
}
