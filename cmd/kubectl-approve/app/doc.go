// Package app is the kubectl-approve plugin: one cobra command per verb
// (list, show, approve, deny, cancel, resolve, wait), each an Options struct
// with Complete/Validate/Run over cli-runtime's ConfigFlags and IOStreams.
// It owns how decisions are built from what the user read (payloadHash and
// revision), how the result is waited for, and how errors are shown.
package app
