// CUDA runtime API types: cudaError_t (real values), memcpy kinds, streams, events, properties.
#pragma once

// X(name, value, description); description nullptr means "use the name".
#define CUDAPERF_ERRORS(X)                                                           \
  X(cudaSuccess, 0, "no error")                                                      \
  X(cudaErrorInvalidValue, 1, "invalid argument")                                    \
  X(cudaErrorMemoryAllocation, 2, "out of memory")                                   \
  X(cudaErrorInitializationError, 3, "initialization error")                         \
  X(cudaErrorCudartUnloading, 4, "driver shutting down")                             \
  X(cudaErrorProfilerDisabled, 5, nullptr)                                           \
  X(cudaErrorProfilerNotInitialized, 6, nullptr)                                     \
  X(cudaErrorProfilerAlreadyStarted, 7, nullptr)                                     \
  X(cudaErrorProfilerAlreadyStopped, 8, nullptr)                                     \
  X(cudaErrorInvalidConfiguration, 9, "invalid configuration argument")              \
  X(cudaErrorInvalidPitchValue, 12, "invalid pitch argument")                        \
  X(cudaErrorInvalidSymbol, 13, "invalid device symbol")                             \
  X(cudaErrorInvalidHostPointer, 16, "invalid host pointer")                         \
  X(cudaErrorInvalidDevicePointer, 17, "invalid device pointer")                     \
  X(cudaErrorInvalidTexture, 18, "invalid texture reference")                        \
  X(cudaErrorInvalidTextureBinding, 19, nullptr)                                     \
  X(cudaErrorInvalidChannelDescriptor, 20, nullptr)                                  \
  X(cudaErrorInvalidMemcpyDirection, 21, "invalid copy direction for memcpy")        \
  X(cudaErrorAddressOfConstant, 22, nullptr)                                         \
  X(cudaErrorTextureFetchFailed, 23, nullptr)                                        \
  X(cudaErrorTextureNotBound, 24, nullptr)                                           \
  X(cudaErrorSynchronizationError, 25, nullptr)                                      \
  X(cudaErrorInvalidFilterSetting, 26, nullptr)                                      \
  X(cudaErrorInvalidNormSetting, 27, nullptr)                                        \
  X(cudaErrorMixedDeviceExecution, 28, nullptr)                                      \
  X(cudaErrorNotYetImplemented, 31, nullptr)                                         \
  X(cudaErrorMemoryValueTooLarge, 32, nullptr)                                       \
  X(cudaErrorStubLibrary, 34, nullptr)                                               \
  X(cudaErrorInsufficientDriver, 35, nullptr)                                        \
  X(cudaErrorCallRequiresNewerDriver, 36, nullptr)                                   \
  X(cudaErrorInvalidSurface, 37, nullptr)                                            \
  X(cudaErrorDuplicateVariableName, 43, nullptr)                                     \
  X(cudaErrorDuplicateTextureName, 44, nullptr)                                      \
  X(cudaErrorDuplicateSurfaceName, 45, nullptr)                                      \
  X(cudaErrorDevicesUnavailable, 46, nullptr)                                        \
  X(cudaErrorIncompatibleDriverContext, 49, nullptr)                                 \
  X(cudaErrorMissingConfiguration, 52, "__global__ function call is not configured") \
  X(cudaErrorPriorLaunchFailure, 53, nullptr)                                        \
  X(cudaErrorLaunchMaxDepthExceeded, 65, nullptr)                                    \
  X(cudaErrorLaunchFileScopedTex, 66, nullptr)                                       \
  X(cudaErrorLaunchFileScopedSurf, 67, nullptr)                                      \
  X(cudaErrorSyncDepthExceeded, 68, nullptr)                                         \
  X(cudaErrorLaunchPendingCountExceeded, 69, nullptr)                                \
  X(cudaErrorInvalidDeviceFunction, 98, "invalid device function")                   \
  X(cudaErrorNoDevice, 100, "no CUDA-capable device is detected")                    \
  X(cudaErrorInvalidDevice, 101, "invalid device ordinal")                           \
  X(cudaErrorDeviceNotLicensed, 102, nullptr)                                        \
  X(cudaErrorSoftwareValidityNotEstablished, 103, nullptr)                           \
  X(cudaErrorStartupFailure, 127, nullptr)                                           \
  X(cudaErrorInvalidKernelImage, 200, "device kernel image is invalid")              \
  X(cudaErrorDeviceUninitialized, 201, nullptr)                                      \
  X(cudaErrorMapBufferObjectFailed, 205, nullptr)                                    \
  X(cudaErrorUnmapBufferObjectFailed, 206, nullptr)                                  \
  X(cudaErrorArrayIsMapped, 207, nullptr)                                            \
  X(cudaErrorAlreadyMapped, 208, nullptr)                                            \
  X(cudaErrorNoKernelImageForDevice, 209, nullptr)                                   \
  X(cudaErrorAlreadyAcquired, 210, nullptr)                                          \
  X(cudaErrorNotMapped, 211, nullptr)                                                \
  X(cudaErrorNotMappedAsArray, 212, nullptr)                                         \
  X(cudaErrorNotMappedAsPointer, 213, nullptr)                                       \
  X(cudaErrorECCUncorrectable, 214, nullptr)                                         \
  X(cudaErrorUnsupportedLimit, 215, "limit is not supported on this architecture")   \
  X(cudaErrorDeviceAlreadyInUse, 216, nullptr)                                       \
  X(cudaErrorPeerAccessUnsupported, 217, nullptr)                                    \
  X(cudaErrorInvalidPtx, 218, nullptr)                                               \
  X(cudaErrorInvalidGraphicsContext, 219, nullptr)                                   \
  X(cudaErrorNvlinkUncorrectable, 220, nullptr)                                      \
  X(cudaErrorJitCompilerNotFound, 221, nullptr)                                      \
  X(cudaErrorUnsupportedPtxVersion, 222, nullptr)                                    \
  X(cudaErrorJitCompilationDisabled, 223, nullptr)                                   \
  X(cudaErrorUnsupportedExecAffinity, 224, nullptr)                                  \
  X(cudaErrorUnsupportedDevSideSync, 225, nullptr)                                   \
  X(cudaErrorContained, 226, nullptr)                                                \
  X(cudaErrorInvalidSource, 300, nullptr)                                            \
  X(cudaErrorFileNotFound, 301, nullptr)                                             \
  X(cudaErrorSharedObjectSymbolNotFound, 302, nullptr)                               \
  X(cudaErrorSharedObjectInitFailed, 303, nullptr)                                   \
  X(cudaErrorOperatingSystem, 304, nullptr)                                          \
  X(cudaErrorInvalidResourceHandle, 400, "invalid resource handle")                  \
  X(cudaErrorIllegalState, 401, nullptr)                                             \
  X(cudaErrorLossyQuery, 402, nullptr)                                               \
  X(cudaErrorSymbolNotFound, 500, "named symbol not found")                          \
  X(cudaErrorNotReady, 600, "device not ready")                                      \
  X(cudaErrorIllegalAddress, 700, "an illegal memory access was encountered")        \
  X(cudaErrorLaunchOutOfResources, 701, "too many resources requested for launch")   \
  X(cudaErrorLaunchTimeout, 702, "the launch timed out and was terminated")          \
  X(cudaErrorLaunchIncompatibleTexturing, 703, nullptr)                              \
  X(cudaErrorPeerAccessAlreadyEnabled, 704, nullptr)                                 \
  X(cudaErrorPeerAccessNotEnabled, 705, nullptr)                                     \
  X(cudaErrorSetOnActiveProcess, 708, nullptr)                                       \
  X(cudaErrorContextIsDestroyed, 709, nullptr)                                       \
  X(cudaErrorAssert, 710, "device-side assert triggered")                            \
  X(cudaErrorTooManyPeers, 711, nullptr)                                             \
  X(cudaErrorHostMemoryAlreadyRegistered, 712, nullptr)                              \
  X(cudaErrorHostMemoryNotRegistered, 713, nullptr)                                  \
  X(cudaErrorHardwareStackError, 714, nullptr)                                       \
  X(cudaErrorIllegalInstruction, 715, "an illegal instruction was encountered")      \
  X(cudaErrorMisalignedAddress, 716, "misaligned address")                           \
  X(cudaErrorInvalidAddressSpace, 717, nullptr)                                      \
  X(cudaErrorInvalidPc, 718, nullptr)                                                \
  X(cudaErrorLaunchFailure, 719, "unspecified launch failure")                       \
  X(cudaErrorCooperativeLaunchTooLarge, 720, nullptr)                                \
  X(cudaErrorTensorMemoryLeak, 721, nullptr)                                         \
  X(cudaErrorNotPermitted, 800, "operation not permitted")                           \
  X(cudaErrorNotSupported, 801, "operation not supported")                           \
  X(cudaErrorSystemNotReady, 802, nullptr)                                           \
  X(cudaErrorSystemDriverMismatch, 803, nullptr)                                     \
  X(cudaErrorCompatNotSupportedOnDevice, 804, nullptr)                               \
  X(cudaErrorMpsConnectionFailed, 805, nullptr)                                      \
  X(cudaErrorMpsRpcFailure, 806, nullptr)                                            \
  X(cudaErrorMpsServerNotReady, 807, nullptr)                                        \
  X(cudaErrorMpsMaxClientsReached, 808, nullptr)                                     \
  X(cudaErrorMpsMaxConnectionsReached, 809, nullptr)                                 \
  X(cudaErrorMpsClientTerminated, 810, nullptr)                                      \
  X(cudaErrorCdpNotSupported, 811, nullptr)                                          \
  X(cudaErrorCdpVersionMismatch, 812, nullptr)                                       \
  X(cudaErrorStreamCaptureUnsupported, 900, nullptr)                                 \
  X(cudaErrorStreamCaptureInvalidated, 901, nullptr)                                 \
  X(cudaErrorStreamCaptureMerge, 902, nullptr)                                       \
  X(cudaErrorStreamCaptureUnmatched, 903, nullptr)                                   \
  X(cudaErrorStreamCaptureUnjoined, 904, nullptr)                                    \
  X(cudaErrorStreamCaptureIsolation, 905, nullptr)                                   \
  X(cudaErrorStreamCaptureImplicit, 906, nullptr)                                    \
  X(cudaErrorCapturedEvent, 907, nullptr)                                            \
  X(cudaErrorStreamCaptureWrongThread, 908, nullptr)                                 \
  X(cudaErrorTimeout, 909, nullptr)                                                  \
  X(cudaErrorGraphExecUpdateFailure, 910, nullptr)                                   \
  X(cudaErrorExternalDevice, 911, nullptr)                                           \
  X(cudaErrorInvalidClusterSize, 912, nullptr)                                       \
  X(cudaErrorFunctionNotLoaded, 913, nullptr)                                        \
  X(cudaErrorInvalidResourceType, 914, nullptr)                                      \
  X(cudaErrorInvalidResourceConfiguration, 915, nullptr)                             \
  X(cudaErrorUnknown, 999, "unknown error")

#define CUDAPERF_ERROR_ENUMERATOR(name, value, text) name = value,
enum cudaError { CUDAPERF_ERRORS(CUDAPERF_ERROR_ENUMERATOR) cudaErrorApiFailureBase = 10000 };
#undef CUDAPERF_ERROR_ENUMERATOR
typedef enum cudaError cudaError_t;
#define cudaErrorInvalidHandle cudaErrorInvalidResourceHandle

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

// Streams and events are handles to small host objects; every operation is synchronous.
struct CUstream_st {
  unsigned flags;
};
struct CUevent_st {
  double ms;  // wall-clock time of the last record, milliseconds
  bool recorded;
};
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaMemAttachSingle 0x04
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08
#define cudaDeviceLmemResizeToMax 0x10
#define cudaCpuDeviceId ((int)-1)
#define cudaInvalidDeviceId ((int)-2)
#define cudaOccupancyDefault 0x00
#define cudaOccupancyDisableCachingOverride 0x01

enum cudaLimit {
  cudaLimitStackSize = 0x00,
  cudaLimitPrintfFifoSize = 0x01,
  cudaLimitMallocHeapSize = 0x02,
  cudaLimitDevRuntimeSyncDepth = 0x03,
  cudaLimitDevRuntimePendingLaunchCount = 0x04,
  cudaLimitMaxL2FetchGranularity = 0x05,
  cudaLimitPersistingL2CacheSize = 0x06
};

enum cudaFuncCache {
  cudaFuncCachePreferNone = 0,
  cudaFuncCachePreferShared = 1,
  cudaFuncCachePreferL1 = 2,
  cudaFuncCachePreferEqual = 3
};

enum cudaSharedMemConfig {
  cudaSharedMemBankSizeDefault = 0,
  cudaSharedMemBankSizeFourByte = 1,
  cudaSharedMemBankSizeEightByte = 2
};

enum cudaSharedCarveout {
  cudaSharedmemCarveoutDefault = -1,
  cudaSharedmemCarveoutMaxShared = 100,
  cudaSharedmemCarveoutMaxL1 = 0
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
  cudaFuncAttributeClusterDimMustBeSet = 10,
  cudaFuncAttributeRequiredClusterWidth = 11,
  cudaFuncAttributeRequiredClusterHeight = 12,
  cudaFuncAttributeRequiredClusterDepth = 13,
  cudaFuncAttributeNonPortableClusterSizeAllowed = 14,
  cudaFuncAttributeClusterSchedulingPolicyPreference = 15,
  cudaFuncAttributeMax
};

struct cudaFuncAttributes {
  size_t sharedSizeBytes;
  size_t constSizeBytes;
  size_t localSizeBytes;
  int maxThreadsPerBlock;
  int numRegs;
  int ptxVersion;
  int binaryVersion;
  int cacheModeCA;
  int maxDynamicSharedSizeBytes;
  int preferredShmemCarveout;
  int clusterDimMustBeSet;
  int requiredClusterWidth;
  int requiredClusterHeight;
  int requiredClusterDepth;
  int clusterSchedulingPolicyPreference;
  int nonPortableClusterSizeAllowed;
  int reserved[16];
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};

struct cudaPointerAttributes {
  enum cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};

enum cudaComputeMode { cudaComputeModeDefault = 0 };

struct cudaUUID_t {
  char bytes[16];
};

// Field names and order of CUDA 13's cudaDeviceProp, plus a few fields CUDA 13 removed that
// older code still reads.
struct cudaDeviceProp {
  char name[256];
  cudaUUID_t uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int multiProcessorCount;
  int integrated;
  int canMapHostMemory;
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseCudaArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingCudaArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int deviceNumaConfig;
  int deviceNumaId;
  int mpsEnabled;
  int hostNumaId;
  unsigned int gpuPciDeviceID;
  unsigned int gpuPciSubsystemID;
  int hostNumaMultinodeIpcSupported;
  // Removed in CUDA 13.
  int clockRate;
  int memoryClockRate;
  int deviceOverlap;
  int kernelExecTimeoutEnabled;
  int computeMode;
  int cooperativeMultiDeviceLaunch;
  int reserved[56];
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxPitch = 11,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrTextureAlignment = 14,
  cudaDevAttrGpuOverlap = 15,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrKernelExecTimeout = 17,
  cudaDevAttrIntegrated = 18,
  cudaDevAttrCanMapHostMemory = 19,
  cudaDevAttrComputeMode = 20,
  cudaDevAttrConcurrentKernels = 31,
  cudaDevAttrEccEnabled = 32,
  cudaDevAttrPciBusId = 33,
  cudaDevAttrPciDeviceId = 34,
  cudaDevAttrTccDriver = 35,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrAsyncEngineCount = 40,
  cudaDevAttrUnifiedAddressing = 41,
  cudaDevAttrPciDomainId = 50,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrStreamPrioritiesSupported = 78,
  cudaDevAttrGlobalL1CacheSupported = 79,
  cudaDevAttrLocalL1CacheSupported = 80,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82,
  cudaDevAttrManagedMemory = 83,
  cudaDevAttrIsMultiGpuBoard = 84,
  cudaDevAttrMultiGpuBoardGroupID = 85,
  cudaDevAttrHostNativeAtomicSupported = 86,
  cudaDevAttrSingleToDoublePrecisionPerfRatio = 87,
  cudaDevAttrPageableMemoryAccess = 88,
  cudaDevAttrConcurrentManagedAccess = 89,
  cudaDevAttrComputePreemptionSupported = 90,
  cudaDevAttrCanUseHostPointerForRegisteredMem = 91,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrCanFlushRemoteWrites = 98,
  cudaDevAttrHostRegisterSupported = 99,
  cudaDevAttrPageableMemoryAccessUsesHostPageTables = 100,
  cudaDevAttrDirectManagedMemAccessFromHost = 101,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
  cudaDevAttrMaxPersistingL2CacheSize = 108,
  cudaDevAttrMaxAccessPolicyWindowSize = 109,
  cudaDevAttrReservedSharedMemoryPerBlock = 111,
  cudaDevAttrSparseCudaArraySupported = 112,
  cudaDevAttrHostRegisterReadOnlySupported = 113,
  cudaDevAttrMemoryPoolsSupported = 115,
  cudaDevAttrClusterLaunch = 120,
  cudaDevAttrMax
};

namespace cudaperf {
namespace detail {

// CUDA keeps the last error per host thread.
CUDAPERF_TLS cudaError_t tls_last_error = cudaSuccess;

inline cudaError_t record_error(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
  return e;
}

}  // namespace detail
}  // namespace cudaperf
