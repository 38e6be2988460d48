// Package devcert makes development TLS material: a certificate authority
// and the server and client certificates it signs, as PEM. It is what
// `zizq tls` writes and what the TLS tests use; production deployments
// should bring certificates from their own CA.
package devcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Pair is a certificate and its private key, PEM-encoded.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// TLS parses the pair into a tls.Certificate.
func (p Pair) TLS() (tls.Certificate, error) { return tls.X509KeyPair(p.CertPEM, p.KeyPEM) }

// Authority is a CA that signs certificates.
type Authority struct {
	Pair
	cert *x509.Certificate
	key  crypto.Signer
}

// Spec describes a certificate to make.
type Spec struct {
	// CommonName is the subject's CN.
	CommonName string
	// Hosts are the DNS names and IP addresses a server certificate is
	// valid for (its subject alternative names).
	Hosts []string
	// Validity is how long the certificate is valid from now.
	Validity time.Duration
	// Now is the start of the validity (zero: the current time). It is
	// backdated by an hour to tolerate clock skew.
	Now time.Time
}

func (s Spec) window() (time.Time, time.Time, error) {
	if s.Validity <= 0 {
		return time.Time{}, time.Time{}, errors.New("validity must be positive")
	}
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	return now.Add(-time.Hour), now.Add(s.Validity), nil
}

// NewAuthority makes a self-signed CA.
func NewAuthority(spec Spec) (*Authority, error) {
	from, until, err := spec.window()
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl, err := template(spec.CommonName, from, until)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return authority(der, key)
}

// LoadAuthority reads a CA from its PEM certificate and key.
func LoadAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("CA certificate: no PEM CERTIFICATE block")
	}
	kblock, _ := pem.Decode(keyPEM)
	if kblock == nil {
		return nil, errors.New("CA key: no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(kblock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key: not a signing key")
	}
	a, err := authority(block.Bytes, key)
	if err != nil {
		return nil, err
	}
	if !a.cert.IsCA {
		return nil, errors.New("CA certificate: not a CA")
	}
	if _, err := a.TLS(); err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	return a, nil
}

func authority(der []byte, key crypto.Signer) (*Authority, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Authority{Pair: Pair{CertPEM: encodeCert(der), KeyPEM: keyPEM}, cert: cert, key: key}, nil
}

// Server signs a certificate for a server reachable as spec.Hosts.
func (a *Authority) Server(spec Spec) (Pair, error) {
	if len(spec.Hosts) == 0 {
		return Pair{}, errors.New("a server certificate needs at least one host name or address")
	}
	return a.issue(spec, x509.ExtKeyUsageServerAuth)
}

// Client signs a certificate for a client of mutual TLS.
func (a *Authority) Client(spec Spec) (Pair, error) {
	return a.issue(spec, x509.ExtKeyUsageClientAuth)
}

func (a *Authority) issue(spec Spec, usage x509.ExtKeyUsage) (Pair, error) {
	from, until, err := spec.window()
	if err != nil {
		return Pair{}, err
	}
	if until.After(a.cert.NotAfter) {
		until = a.cert.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generate key: %w", err)
	}
	tmpl, err := template(spec.CommonName, from, until)
	if err != nil {
		return Pair{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	for _, h := range spec.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return Pair{}, fmt.Errorf("create certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

func template(cn string, from, until time.Time) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    from,
		NotAfter:     until,
	}, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
