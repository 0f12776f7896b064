package dashboard

import (
	"net/http"

	"capsuled/internal/domain"
)

// statusOf maps an error kind to the status of the page that reports it.
func statusOf(k domain.Kind) int {
	switch k {
	case domain.KindInvalid:
		return http.StatusBadRequest
	case domain.KindUnauthenticated:
		return http.StatusUnauthorized
	case domain.KindForbidden:
		return http.StatusForbidden
	case domain.KindNotFound:
		return http.StatusNotFound
	case domain.KindConflict:
		return http.StatusConflict
	case domain.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case domain.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case domain.KindRateLimited:
		return http.StatusTooManyRequests
	case domain.KindNotImplemented:
		return http.StatusNotImplemented
	case domain.KindUpstream:
		return http.StatusBadGateway
	case domain.KindUnavailable:
		return http.StatusServiceUnavailable
	case domain.KindTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// userMessage is the message of a client-facing error, with its field.
func userMessage(e *domain.Error) string {
	if e.Param != "" {
		return e.Param + ": " + e.Message
	}
	return e.Message
}

// internal logs err and shows a generic error page.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, s *session, what string, err error) {
	h.log.ErrorContext(r.Context(), "dashboard: "+what, "err", err)
	h.fail(w, r, s, http.StatusInternalServerError, "Something went wrong on the server ("+what+"); its log has the details.")
}

// serviceError shows a client-facing error with its status, or an internal one.
func (h *Handler) serviceError(w http.ResponseWriter, r *http.Request, s *session, what string, err error) {
	if e, ok := domain.AsError(err); ok && e.Kind != domain.KindInternal {
		h.fail(w, r, s, statusOf(e.Kind), userMessage(e))
		return
	}
	h.internal(w, r, s, what, err)
}

// confirmData is a confirmation page: a question and one POST button.
type confirmData struct {
	CSRF    string
	Heading string
	Body    string
	Action  string
	Button  string
	Back    string
}
