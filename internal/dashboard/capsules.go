package dashboard

import (
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"

	"capsuled/internal/domain"
)

const capsulesUnavailable = "Capsules are not available on this server."

type capsulesData struct {
	CSRF     string
	Capsules []domain.Capsule
	Form     capsuleForm
}

type capsuleForm struct{ Name, Description string }

func (h *Handler) unavailable(w http.ResponseWriter, r *http.Request, s *session, nav, title, msg string) {
	h.render(w, r, http.StatusOK, "unavailable", view{Title: title, Nav: nav, Session: s, Data: msg})
}

func (h *Handler) capsulesPage(w http.ResponseWriter, r *http.Request, s *session) {
	h.showCapsules(w, r, s, http.StatusOK, capsuleForm{}, "")
}

func (h *Handler) showCapsules(w http.ResponseWriter, r *http.Request, s *session, status int, f capsuleForm, msg string) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	list, err := h.capsules.ListCapsules(r.Context())
	if err != nil {
		h.serviceError(w, r, s, "list capsules", err)
		return
	}
	h.render(w, r, status, "capsules", view{Title: "Capsules", Nav: "capsules", Session: s, Error: msg,
		Data: capsulesData{CSRF: s.CSRF, Capsules: allowedCapsules(s, list), Form: f}})
}

func (h *Handler) createCapsule(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	f := capsuleForm{Name: r.PostFormValue("name"), Description: r.PostFormValue("description")}
	if err := domain.ValidateCapsuleName(f.Name); err != nil {
		h.showCapsules(w, r, s, http.StatusBadRequest, f, userMessage(err.(*domain.Error)))
		return
	}
	if !s.principal().CanCapsule(f.Name) {
		h.showCapsules(w, r, s, http.StatusForbidden, f, fmt.Sprintf("The key you signed in with may not use the capsule “%s”.", f.Name))
		return
	}
	c, err := h.capsules.CreateCapsule(r.Context(), f.Name, f.Description)
	if err != nil {
		if e, ok := domain.AsError(err); ok && e.Kind != domain.KindInternal {
			h.showCapsules(w, r, s, statusOf(e.Kind), f, userMessage(e))
			return
		}
		h.internal(w, r, s, "create capsule", err)
		return
	}
	redirect(w, r, Prefix+"/capsules/"+url.PathEscape(c.Name), "capsule-created")
}

type capsuleData struct {
	CSRF    string
	Capsule domain.Capsule
	Items   []domain.Item
	Max     string
}

func (h *Handler) findCapsule(r *http.Request, name string) (domain.Capsule, error) {
	list, err := h.capsules.ListCapsules(r.Context())
	if err != nil {
		return domain.Capsule{}, err
	}
	for _, c := range list {
		if c.Name == name {
			return c, nil
		}
	}
	return domain.Capsule{}, domain.NotFound("capsule", name)
}

func (h *Handler) capsulePage(w http.ResponseWriter, r *http.Request, s *session) {
	h.showCapsule(w, r, s, http.StatusOK, "")
}

func (h *Handler) showCapsule(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	if !h.capsuleAllowed(w, r, s, r.PathValue("capsule")) {
		return
	}
	c, err := h.findCapsule(r, r.PathValue("capsule"))
	if err != nil {
		h.serviceError(w, r, s, "get capsule", err)
		return
	}
	items, err := h.capsules.ListItems(r.Context(), c.Name)
	if err != nil {
		h.serviceError(w, r, s, "list items", err)
		return
	}
	h.render(w, r, status, "capsule", view{Title: "Capsule " + c.Name, Nav: "capsules", Session: s, Error: msg,
		Data: capsuleData{CSRF: s.CSRF, Capsule: c, Items: items, Max: humanBytes(h.cfg.MaxUploadBytes)}})
}

func (h *Handler) uploadItems(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	name := r.PathValue("capsule")
	if !h.capsuleAllowed(w, r, s, name) {
		return
	}
	var files []*multipart.FileHeader
	if r.MultipartForm != nil {
		files = r.MultipartForm.File["files"]
	}
	if len(files) == 0 {
		h.showCapsule(w, r, s, http.StatusBadRequest, "Choose at least one file to upload.")
		return
	}
	for _, fh := range files {
		if fh.Size > h.cfg.MaxUploadBytes {
			h.showCapsule(w, r, s, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("%s is %s; the largest upload is %s.", fh.Filename, humanBytes(fh.Size), humanBytes(h.cfg.MaxUploadBytes)))
			return
		}
	}
	for _, fh := range files {
		if err := h.addFile(r, name, fh); err != nil {
			if e, ok := domain.AsError(err); ok && e.Kind != domain.KindInternal {
				h.showCapsule(w, r, s, statusOf(e.Kind), fh.Filename+": "+userMessage(e))
				return
			}
			h.internal(w, r, s, "upload", err)
			return
		}
	}
	redirect(w, r, Prefix+"/capsules/"+url.PathEscape(name), "uploaded")
}

func (h *Handler) addFile(r *http.Request, capsule string, fh *multipart.FileHeader) error {
	f, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open upload %s: %w", fh.Filename, err)
	}
	defer f.Close()
	_, err = h.capsules.AddFile(r.Context(), capsule, Upload{
		FileName: fh.Filename, FileType: fh.Header.Get("Content-Type"), Size: fh.Size, Body: f,
	})
	return err
}

func (h *Handler) deleteCapsulePage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	if !h.capsuleAllowed(w, r, s, r.PathValue("capsule")) {
		return
	}
	c, err := h.findCapsule(r, r.PathValue("capsule"))
	if err != nil {
		h.serviceError(w, r, s, "get capsule", err)
		return
	}
	h.render(w, r, http.StatusOK, "confirm", view{Title: "Delete capsule", Nav: "capsules", Session: s, Data: confirmData{
		CSRF:    s.CSRF,
		Heading: "Delete the capsule “" + c.Name + "”?",
		Body:    fmt.Sprintf("Its %d items and %d chunks are deleted with it. This cannot be undone.", c.ItemCount, c.ChunkCount),
		Action:  Prefix + "/capsules/" + url.PathEscape(c.Name) + "/delete",
		Button:  "Delete capsule",
		Back:    Prefix + "/capsules/" + url.PathEscape(c.Name),
	}})
}

func (h *Handler) deleteCapsule(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	if !h.capsuleAllowed(w, r, s, r.PathValue("capsule")) {
		return
	}
	if err := h.capsules.DeleteCapsule(r.Context(), r.PathValue("capsule")); err != nil {
		h.serviceError(w, r, s, "delete capsule", err)
		return
	}
	redirect(w, r, Prefix+"/capsules", "capsule-deleted")
}

func (h *Handler) deleteItemPage(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	name, id := r.PathValue("capsule"), r.PathValue("item")
	if !h.capsuleAllowed(w, r, s, name) {
		return
	}
	items, err := h.capsules.ListItems(r.Context(), name)
	if err != nil {
		h.serviceError(w, r, s, "list items", err)
		return
	}
	label := ""
	for _, it := range items {
		if it.ID == id {
			label = it.FileName
			if label == "" {
				label = it.URI
			}
			if label == "" {
				label = it.ID
			}
		}
	}
	if label == "" {
		h.serviceError(w, r, s, "get item", domain.NotFound("item", id))
		return
	}
	h.render(w, r, http.StatusOK, "confirm", view{Title: "Delete item", Nav: "capsules", Session: s, Data: confirmData{
		CSRF:    s.CSRF,
		Heading: "Delete the item “" + label + "”?",
		Body:    "It and its chunks are removed from the capsule “" + name + "”. This cannot be undone.",
		Action:  Prefix + "/capsules/" + url.PathEscape(name) + "/items/" + url.PathEscape(id) + "/delete",
		Button:  "Delete item",
		Back:    Prefix + "/capsules/" + url.PathEscape(name),
	}})
}

func (h *Handler) deleteItem(w http.ResponseWriter, r *http.Request, s *session) {
	if h.capsules == nil {
		h.unavailable(w, r, s, "capsules", "Capsules", capsulesUnavailable)
		return
	}
	name := r.PathValue("capsule")
	if !h.capsuleAllowed(w, r, s, name) {
		return
	}
	if err := h.capsules.DeleteItem(r.Context(), name, r.PathValue("item")); err != nil {
		h.serviceError(w, r, s, "delete item", err)
		return
	}
	redirect(w, r, Prefix+"/capsules/"+url.PathEscape(name), "item-deleted")
}
