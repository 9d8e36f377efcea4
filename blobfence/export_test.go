package blobfence

// Decode lets the package's external tests read the envelope of a stored
// object.
var Decode = decode
