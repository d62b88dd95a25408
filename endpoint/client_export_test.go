package endpoint

// InjectAsyncError hands err to the Endpoint as if the broker had reported it asynchronously,
// so tests can drive the late-refusal path (SPEC §7) without changing a live credential.
func InjectAsyncError(e *Endpoint, err error) { e.onAsyncError(e.nc, nil, err) }
