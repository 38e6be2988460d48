package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// Defaults of Config.ReadHeaderTimeout and Config.IdleTimeout.
const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultIdleTimeout       = 120 * time.Second
)

// Request header limits. net/http answers a header past its own limit
// before any handler runs, in plain text; so its limit is set above ours,
// and the router refuses what lies between with a JSON 431 like every other
// refusal. Only a header past hardMaxHeaderBytes still gets net/http's
// plain-text answer (or, over HTTP/2, the client's own refusal to send it,
// as the server advertises the limit).
const (
	maxHeaderBytes     = 1 << 20 // net/http's default
	hardMaxHeaderBytes = 4 << 20
)

// LoadTLS reads the PEM files of the API's TLS: the server's certificate
// (chain) and its private key, and, when clientCAFile is not empty, the CA
// certificates that every client must present a certificate signed by
// (mutual TLS).
func LoadTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("a TLS certificate and its key are both needed")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pool, err := LoadCertPool(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("load TLS client CA: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// LoadCertPool reads a PEM file of CA certificates into a pool.
func LoadCertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate found", file)
	}
	return pool, nil
}

// httpServer returns the http.Server of Serve: header-read and idle
// timeouts so that stalled or idle clients cannot pile up, and no
// whole-response timeout, which would cut take streams (those bound each
// write instead).
func (s *Server) httpServer(h http.Handler) *http.Server {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    hardMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if hs.ReadHeaderTimeout <= 0 {
		hs.ReadHeaderTimeout = defaultReadHeaderTimeout
	}
	if hs.IdleTimeout <= 0 {
		hs.IdleTimeout = defaultIdleTimeout
	}
	return hs
}

// serveOn serves hs on l: TLS with ALPN h2 and http/1.1 when tlsCfg is
// set, else HTTP/1.1 and cleartext HTTP/2 with prior knowledge.
func (s *Server) serveOn(hs *http.Server, l net.Listener, tlsCfg *tls.Config) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	hs.Protocols = &protocols
	if tlsCfg != nil {
		protocols.SetHTTP2(true)
		hs.TLSConfig = tlsCfg.Clone()
		return hs.ServeTLS(l, "", "")
	}
	protocols.SetUnencryptedHTTP2(true)
	return hs.Serve(l)
}
